/**
 * What the viewer keeps of a run's metrics.jsonl, fed line by line as the file grows: every eval line,
 * at most `cap` training lines (every `stride`-th step, the stride doubling as the run grows, plus the
 * newest) and the headline figures over all of them. A run of 100,000 steps costs the viewer the
 * same memory, and its curves page the same bytes, as one of `cap` steps; a chart has fewer pixels
 * than that anyway.
 */
import type { MetricsLine } from '../runs/index.js';

/** Training lines kept by default: about two per pixel of a wide chart. */
export const DEFAULT_TRAIN_POINTS = 2000;

export class MetricsDigest {
  private kept: MetricsLine[] = [];
  // The newest training line, as parsed or as its text when it was thinned out unparsed.
  private newest: MetricsLine | string | undefined;
  private newestReward: number | null = null;
  private readonly evalLines: MetricsLine[] = [];
  private strideSteps = 1;
  private maxStep = 0;
  private best: number | null = null;

  constructor(private readonly cap = DEFAULT_TRAIN_POINTS) {}

  /** Takes one parsed line of the file, in file order. */
  add(line: MetricsLine): void {
    if (line.kind === 'eval') {
      this.evalLines.push(line);
      return;
    }
    if (line.kind !== 'train' && line.kind !== undefined) return;
    const step = typeof line.step === 'number' ? line.step : 0;
    this.note(step, typeof line.reward_mean === 'number' ? line.reward_mean : undefined, line);
    if (!this.wants(step)) return;
    this.kept.push(line);
    if (this.kept.length > this.cap) {
      this.strideSteps *= 2;
      this.kept = this.kept.filter((l) => (typeof l.step === 'number' ? l.step : 0) % this.strideSteps === 0);
    }
  }

  /** Whether a training line of `step` would be kept: one that would not may be given to `addThinned` unparsed. */
  wants(step: number): boolean {
    return step % this.strideSteps === 0;
  }

  /**
   * Takes a training line the chart does not keep (`wants(step)` is false) without parsing it: its step and
   * reward_mean, read off its text, count in the headline figures; the text is parsed only if it stays the newest.
   */
  addThinned(step: number, rewardMean: number | undefined, text: string): void {
    this.note(step, rewardMean, text);
  }

  /** The training lines a chart draws: every `stride`-th step and the newest, in file order. */
  get train(): readonly MetricsLine[] {
    if (typeof this.newest === 'string') this.newest = JSON.parse(this.newest) as MetricsLine;
    return this.newest && this.kept.at(-1) !== this.newest ? [...this.kept, this.newest] : this.kept;
  }

  /** Every eval line, in file order. */
  get evals(): readonly MetricsLine[] {
    return this.evalLines;
  }

  /** Steps between the training lines kept (1 until the run passes `cap` steps). */
  get stride(): number {
    return this.strideSteps;
  }

  /** The highest step of any training line. */
  get stepsDone(): number {
    return this.maxStep;
  }

  /** The newest training line's reward_mean. */
  get lastReward(): number | null {
    return this.newestReward;
  }

  /** The highest reward_mean of any training line. */
  get bestReward(): number | null {
    return this.best;
  }

  private note(step: number, rewardMean: number | undefined, line: MetricsLine | string): void {
    this.maxStep = Math.max(this.maxStep, step);
    if (rewardMean !== undefined) this.best = Math.max(this.best ?? -Infinity, rewardMean);
    this.newest = line;
    this.newestReward = rewardMean ?? null;
  }
}
