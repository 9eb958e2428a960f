/** Who put a run of tokens into the trajectory. Only `model` tokens are trained on (mask 1). */
export type SegmentSource = 'prompt' | 'model' | 'tool' | 'user';

/** A contiguous run of tokens from one source. */
export interface TrajectorySegment {
  readonly source: SegmentSource;
  /** Index of the first token in `ids`. */
  readonly start: number;
  readonly length: number;
  /** Model turn this segment belongs to: the prompt of turn t and the model output of turn t share t. */
  readonly turn: number;
  /** Policy version that sampled these tokens (model segments only). */
  readonly policyVersion?: number;
  /** Engine finish reason of the model segment: stop, length, abort. */
  readonly finishReason?: string;
}

/** Episode counters stored with the tokens. */
export interface TrajectoryCounters {
  turns: number;
  toolCalls: number;
  toolErrors: number;
  truncations: number;
}

/** The line format of a trajectory in `trajectories/*.jsonl` (see `toJSON`). */
export interface TrajectoryJSON {
  readonly format: typeof TRAJECTORY_FORMAT;
  readonly ids: readonly number[];
  /** `[source, length, turn, policyVersion?, finishReason?]` per segment, in order. */
  readonly segments: readonly (readonly [SegmentSource, number, number, number?, string?])[];
  /** One logprob per model token, in order (so `logprobs.length` = number of mask-1 tokens). */
  readonly logprobs: readonly number[];
  readonly counters: TrajectoryCounters;
}

export const TRAJECTORY_FORMAT = 'atk.trajectory/1';

/**
 * The exact tokens of one episode: environment tokens (mask 0) and the engine's own tokens (mask 1)
 * with their logprobs, in the order the model saw them. Append-only.
 */
export class TokenTrajectory {
  readonly ids: number[] = [];
  readonly segments: TrajectorySegment[] = [];
  /** Logprobs of model tokens only, in order; `logprobsFull()` spreads them over all positions. */
  readonly modelLogprobs: number[] = [];
  readonly counters: TrajectoryCounters = { turns: 0, toolCalls: 0, toolErrors: 0, truncations: 0 };

  get length(): number {
    return this.ids.length;
  }

  /** Tokens of the first prompt (everything before the model's first token). */
  get promptLength(): number {
    const first = this.segments[0];
    return first && first.source !== 'model' ? first.length : 0;
  }

  /** Appends environment tokens (mask 0). */
  appendEnvironment(source: Exclude<SegmentSource, 'model'>, ids: readonly number[], turn: number): void {
    this.push({ source, start: this.ids.length, length: ids.length, turn }, ids);
  }

  /**
   * Appends the engine's tokens (mask 1) with one logprob each.
   * @throws Error when the counts differ (an engine client bug; the trainer would misalign).
   */
  appendModel(
    ids: readonly number[],
    logprobs: readonly number[],
    turn: number,
    policyVersion: number,
    finishReason: string,
  ): void {
    if (ids.length !== logprobs.length)
      throw new Error(`model segment has ${ids.length} tokens but ${logprobs.length} logprobs`);
    this.push({ source: 'model', start: this.ids.length, length: ids.length, turn, policyVersion, finishReason }, ids);
    for (const lp of logprobs) this.modelLogprobs.push(lp);
  }

  /** Loss mask: 1 exactly on model tokens. */
  mask(): number[] {
    const mask = new Array<number>(this.ids.length).fill(0);
    for (const s of this.segments) if (s.source === 'model') mask.fill(1, s.start, s.start + s.length);
    return mask;
  }

  /** Logprobs aligned with `ids`; `null` where the mask is 0. */
  logprobsFull(): (number | null)[] {
    const full = new Array<number | null>(this.ids.length).fill(null);
    let k = 0;
    for (const s of this.segments) {
      if (s.source !== 'model') continue;
      for (let i = 0; i < s.length; i++) full[s.start + i] = this.modelLogprobs[k++];
    }
    return full;
  }

  /** Compact form for JSONL: ids once, segments as tuples, logprobs only where they exist. */
  toJSON(): TrajectoryJSON {
    return {
      format: TRAJECTORY_FORMAT,
      ids: this.ids,
      segments: this.segments.map((s) =>
        s.source === 'model'
          ? [s.source, s.length, s.turn, s.policyVersion, s.finishReason]
          : [s.source, s.length, s.turn],
      ),
      logprobs: this.modelLogprobs,
      counters: this.counters,
    };
  }

  /** @throws Error when the value is not a consistent trajectory of this format. */
  static fromJSON(value: unknown): TokenTrajectory {
    const json = value as Partial<TrajectoryJSON> | null;
    if (
      json?.format !== TRAJECTORY_FORMAT ||
      !Array.isArray(json.ids) ||
      !Array.isArray(json.segments) ||
      !Array.isArray(json.logprobs)
    ) {
      throw new Error(`not an ${TRAJECTORY_FORMAT} trajectory`);
    }
    const trajectory = new TokenTrajectory();
    let at = 0;
    let lp = 0;
    for (const [source, length, turn, policyVersion, finishReason] of json.segments) {
      const ids = json.ids.slice(at, at + length);
      if (ids.length !== length) throw new Error('trajectory segments are longer than its ids');
      if (source === 'model') {
        trajectory.appendModel(
          ids,
          json.logprobs.slice(lp, lp + length),
          turn,
          policyVersion ?? 0,
          finishReason ?? 'stop',
        );
        lp += length;
      } else {
        trajectory.appendEnvironment(source, ids, turn);
      }
      at += length;
    }
    if (at !== json.ids.length || lp !== json.logprobs.length)
      throw new Error('trajectory ids or logprobs outnumber its segments');
    Object.assign(trajectory.counters, json.counters);
    return trajectory;
  }

  private push(segment: TrajectorySegment, ids: readonly number[]): void {
    if (ids.length === 0) return;
    this.segments.push(segment);
    for (const id of ids) this.ids.push(id);
  }
}
