import type { ChatMessage } from '../tokens/chat-types.js';
import type { TrajectoryJSON } from '../tokens/trajectory.js';
import type { AssembledBatch } from '../algorithms/batch.js';
import type { Rollout } from '../rollout/collect.js';
import type { StepMetrics } from './events.js';
import type { StalenessVerdict } from '../rollout/staleness.js';
import type { SyncTransfer } from '../engines/sync/index.js';
import type { DataState } from '../rollout/data-stream.js';
import type { SampledStep } from '../rollout/dynamic-sampling.js';
import type { ResolvedRecipe } from '../recipe/index.js';

/** Figures shared by training steps and evals: means over a set of rollouts. */
export function rolloutFigures(rollouts: readonly Rollout[]): {
  reward_mean: number;
  accuracy: number;
  failed_episodes: number;
  tool_calls_per_episode: number;
  tool_error_rate: number;
  mean_turns: number;
  response_tokens_mean: number;
  generated_tokens: number;
  episode_seconds_mean: number;
} {
  const n = Math.max(1, rollouts.length);
  const sum = (f: (r: Rollout) => number): number => rollouts.reduce((a, r) => a + f(r), 0);
  const toolCalls = sum((r) => r.episode.stats.toolCalls);
  const generated = sum((r) => r.episode.stats.generatedTokens);
  return {
    reward_mean: sum((r) => r.reward) / n,
    accuracy: sum((r) => (r.success ? 1 : 0)) / n,
    failed_episodes: sum((r) => (r.failed ? 1 : 0)),
    tool_calls_per_episode: toolCalls / n,
    tool_error_rate: toolCalls ? sum((r) => r.episode.stats.toolErrors) / toolCalls : 0,
    mean_turns: sum((r) => r.episode.stats.turns) / n,
    response_tokens_mean: generated / n,
    generated_tokens: generated,
    episode_seconds_mean: sum((r) => r.episode.stats.wallMs) / n / 1000,
  };
}

export interface StepFacts {
  readonly step: number;
  readonly policyVersion: number;
  readonly groups: readonly (readonly Rollout[])[];
  readonly batch: AssembledBatch;
  readonly trainerMetrics: Readonly<Record<string, number>>;
  readonly seconds: {
    readonly generation: number;
    readonly train: number;
    readonly sync: number;
    readonly step: number;
  };
  readonly overlap: OverlapFigures;
  /** What the step's weight sync moved, when it moved weights into launched engines. */
  readonly transfer?: SyncTransfer | undefined;
  /** The sync probe's largest logprob gap between engine and trainer after the step's sync. */
  readonly probe?: number | undefined;
  /** `dynamic_sampling/*`, `curriculum/*` and `data/position` (see samplingFigures). */
  readonly sampling?: SamplingFigures;
}

/** The figures of dynamic sampling and the curriculum in a step's metrics line. */
export interface SamplingFigures {
  readonly [dynamicSampling: `dynamic_sampling/${string}`]: number;
  readonly [curriculum: `curriculum/${string}`]: number;
  readonly 'data/position'?: number;
}

/**
 * What a step's sampling did, for the recipes that turn it on: with `algorithm.dynamic_sampling`, the
 * groups sampled and kept (with a reward spread), the rounds run and whether they ran out (1) before
 * `train.tasks_per_step` groups were kept; with `dataset.curriculum`, the tasks it skipped as solved and
 * as unsolved; with either, where the data stream's cursor stands after the step (tasks read, skips included).
 */
export function samplingFigures(
  collected: { readonly sampled: SampledStep<unknown>; readonly dataState: DataState },
  recipe: {
    readonly algorithm: Pick<ResolvedRecipe['algorithm'], 'dynamic_sampling'>;
    readonly dataset: Pick<ResolvedRecipe['dataset'], 'curriculum'>;
  },
): SamplingFigures {
  const { sampled } = collected;
  const dynamic = recipe.algorithm.dynamic_sampling !== undefined;
  const curriculum = recipe.dataset.curriculum !== undefined;
  return {
    ...(dynamic
      ? {
          'dynamic_sampling/groups_sampled': sampled.groups.length,
          'dynamic_sampling/groups_kept': sampled.kept.length,
          'dynamic_sampling/rounds': sampled.rounds,
          'dynamic_sampling/ran_out': sampled.ranOut ? 1 : 0,
        }
      : {}),
    ...(curriculum
      ? {
          'curriculum/skipped_solved': sampled.skippedSolved,
          'curriculum/skipped_unsolved': sampled.skippedUnsolved,
        }
      : {}),
    ...(dynamic || curriculum ? { 'data/position': collected.dataState.position } : {}),
  };
}

/** How generation and training overlapped in one step, and how stale its episodes were. */
export interface OverlapFigures {
  readonly staleness_mean: number;
  readonly staleness_max: number;
  /** Groups left out of the batch because an episode was sampled more than max_staleness versions back. */
  readonly stale_groups_dropped: number;
  /** Share of the step's wall time (since the previous step was recorded) with at least one episode running. */
  readonly engine_busy_share: number;
  /** Share of the step's wall time the trainer spent updating and syncing. */
  readonly trainer_busy_share: number;
  /** Seconds with at least one episode running since the previous step was recorded (not a metrics key: tokens/s divides by it). */
  readonly engine_busy_s: number;
}

/** The overlap figures of a step from its staleness verdict and the busy times measured over `wallSeconds`. */
export function overlapFigures(
  verdict: StalenessVerdict,
  engineBusySeconds: number,
  trainerBusySeconds: number,
  wallSeconds: number,
): OverlapFigures {
  const share = (busy: number): number => (wallSeconds > 0 ? Math.min(1, busy / wallSeconds) : 0);
  return {
    staleness_mean: verdict.mean,
    staleness_max: verdict.max,
    stale_groups_dropped: verdict.dropped.length,
    engine_busy_share: share(engineBusySeconds),
    trainer_busy_share: share(trainerBusySeconds),
    engine_busy_s: engineBusySeconds,
  };
}

/** The metrics.jsonl line of one training step. */
export function stepMetrics(facts: StepFacts): StepMetrics {
  const rollouts = facts.groups.flat();
  const figures = rolloutFigures(rollouts);
  const parts = meansPerEpisode(rollouts, 'reward', (r) => r.parts);
  const toolCalls = meansPerEpisode(rollouts, 'tool_calls', (r) => r.episode.stats.toolCallsByTool);
  // Every tool called in the step gets an error figure, 0 included, so its curve has no gaps.
  const toolErrors = meansPerEpisode(rollouts, 'tool_errors', (r) => ({
    ...zeroed(r.episode.stats.toolCallsByTool),
    ...r.episode.stats.toolErrorsByTool,
  }));
  const trainer: Record<`train/${string}`, number> = {};
  for (const [k, v] of Object.entries(facts.trainerMetrics)) trainer[`train/${k}`] = v;
  return {
    kind: 'train',
    step: facts.step,
    at: new Date().toISOString(),
    policy_version: facts.policyVersion,
    ...figures,
    episodes: rollouts.length,
    groups: facts.batch.groups,
    dropped_groups: facts.batch.droppedGroups,
    trained_sequences: facts.batch.sequences.length,
    // Over the time the engine had episodes running: with rollouts collected ahead, the wait for them can be near 0.
    generation_tokens_per_s:
      facts.overlap.engine_busy_s > 0 ? figures.generated_tokens / facts.overlap.engine_busy_s : 0,
    staleness_mean: facts.overlap.staleness_mean,
    staleness_max: facts.overlap.staleness_max,
    stale_groups_dropped: facts.overlap.stale_groups_dropped,
    engine_busy_share: facts.overlap.engine_busy_share,
    trainer_busy_share: facts.overlap.trainer_busy_share,
    time_generation_s: facts.seconds.generation,
    time_train_s: facts.seconds.train,
    time_sync_s: facts.seconds.sync,
    time_step_s: facts.seconds.step,
    ...failuresByKind(rollouts),
    ...toolCalls,
    ...toolErrors,
    ...gatewayFigures(rollouts),
    ...segmentFigures(rollouts),
    ...conversationFigures(rollouts),
    ...syncFigures(facts.transfer, facts.probe),
    ...facts.sampling,
    ...(facts.batch.distill
      ? { 'distill/reverse_kl': facts.batch.distill.reverseKl, 'distill/tokens': facts.batch.distill.tokens }
      : {}),
    ...parts,
    ...trainer,
    ...processMemory(),
  };
}

/** atk's resident memory and JS heap in MiB (process.memoryUsage(): microseconds, so every step can afford it). */
export function processMemory(): { 'atk/rss_mb': number; 'atk/heap_used_mb': number } {
  const { rss, heapUsed } = process.memoryUsage();
  const mib = (bytes: number): number => Math.round((bytes / 2 ** 20) * 10) / 10;
  return { 'atk/rss_mb': mib(rss), 'atk/heap_used_mb': mib(heapUsed) };
}

/** `failed/<kind>`: the step's failed episodes by the layer that failed (only kinds that occurred). */
export function failuresByKind(rollouts: readonly Rollout[]): Record<`failed/${string}`, number> {
  const counts: Record<`failed/${string}`, number> = {};
  for (const r of rollouts.filter((x) => x.failed)) {
    const key = `failed/${r.errorKind ?? 'unknown'}` as const;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

/**
 * `sync/bytes` and, for a broadcast, `sync/tensors` (nothing when the sync moved nothing: embedded, no update),
 * and `sync/probe_max_abs_logprob_diff`, the check after the sync (absent when no sync ran).
 */
function syncFigures(transfer: SyncTransfer | undefined, probe: number | undefined): Record<`sync/${string}`, number> {
  return {
    ...(transfer ? { 'sync/bytes': transfer.bytes } : {}),
    ...(transfer?.tensors === undefined ? {} : { 'sync/tensors': transfer.tensors }),
    ...(probe === undefined ? {} : { 'sync/probe_max_abs_logprob_diff': probe }),
  };
}

/**
 * Multi-turn steps and evals only (a simulated user spoke after the first prompt, or the reward checks
 * a policy): user messages per episode, and the policy rules broken per episode as the reward's
 * `info.policy_violations` lists them (the `tau2` reward on a domain with a policy check, e.g. helpdesk).
 */
export function conversationFigures(
  rollouts: readonly Rollout[],
): Partial<Record<'user_turns_per_episode' | 'policy_violations_per_episode', number>> {
  const n = Math.max(1, rollouts.length);
  const violations = rollouts.map((r) => r.rewardInfo?.policy_violations);
  const checked = violations.some(Array.isArray);
  const userTurns = rollouts.map((r) => r.episode.stats.userTurns ?? 0);
  if (!checked && userTurns.every((t) => t <= 1)) return {};
  return {
    user_turns_per_episode: userTurns.reduce((a, t) => a + t, 0) / n,
    ...(checked
      ? {
          policy_violations_per_episode:
            violations.reduce<number>((a, v) => a + (Array.isArray(v) ? v.length : 0), 0) / n,
        }
      : {}),
  };
}

/** External-agent steps and evals only: history rewrites per episode (each started a new trajectory segment). */
export function gatewayFigures(rollouts: readonly Rollout[]): Record<`gateway/${string}`, number> {
  const rewrites = rollouts.map((r) => r.episode.stats.historyRewrites);
  if (rewrites.every((n) => n === undefined)) return {};
  return {
    'gateway/history_rewrites': rewrites.reduce<number>((a, n) => a + (n ?? 0), 0) / Math.max(1, rollouts.length),
  };
}

/**
 * Steps and evals whose episodes were split in trajectory segments (a history rewrite, stripped
 * reasoning, context management): segments per episode, each rewrite reason's count per episode, and
 * the prompt tokens context management left out per episode. Nothing when no episode was split and no
 * context management ran.
 */
export function segmentFigures(rollouts: readonly Rollout[]): Record<`segments/${string}`, number> {
  const dropped = rollouts.map((r) => r.episode.stats.contextDroppedTokens);
  const split = rollouts.some((r) => (r.episode.priorSegments?.length ?? 0) > 0);
  if (!split && dropped.every((n) => n === undefined)) return {};
  const n = Math.max(1, rollouts.length);
  return {
    'segments/per_episode': rollouts.reduce((a, r) => a + 1 + (r.episode.priorSegments?.length ?? 0), 0) / n,
    ...meansPerEpisode(rollouts, 'segments/rewrites', (r) => {
      const counts: Record<string, number> = {};
      for (const s of r.episode.priorSegments ?? []) counts[s.endedBecause] = (counts[s.endedBecause] ?? 0) + 1;
      return counts;
    }),
    ...(dropped.some((d) => d !== undefined)
      ? { 'segments/context_dropped_tokens': dropped.reduce<number>((a, d) => a + (d ?? 0), 0) / n }
      : {}),
  };
}

/** `<prefix>/<name>`: the mean over `rollouts` of each name's count (an episode without it counts 0). */
function meansPerEpisode<P extends string>(
  rollouts: readonly Rollout[],
  prefix: P,
  counts: (r: Rollout) => Readonly<Record<string, number>>,
): Record<`${P}/${string}`, number> {
  const names = new Set(rollouts.flatMap((r) => Object.keys(counts(r))));
  return Object.fromEntries(
    [...names].map((name) => [
      `${prefix}/${name}`,
      rollouts.reduce((a, r) => a + (counts(r)[name] ?? 0), 0) / Math.max(1, rollouts.length),
    ]),
  ) as Record<`${P}/${string}`, number>;
}

function zeroed(counts: Readonly<Record<string, number>>): Record<string, number> {
  return Object.fromEntries(Object.keys(counts).map((name) => [name, 0]));
}

/**
 * The earlier segments of an episode as its trajectory line stores them: each segment's tokens
 * shared with the start of the segment after it (the system prompt and task a window keeps, the
 * turns before a stripped reasoning) are not written again; `shared_prefix` counts them and
 * `restorePriorSegments` puts them back.
 */
export function priorSegmentRecords(episode: Rollout['episode']): PriorSegmentRecord[] {
  const segments = [...(episode.priorSegments ?? []).map((s) => s.trajectory), episode.trajectory];
  return (episode.priorSegments ?? []).map((s, i) => {
    const json = s.trajectory.toJSON();
    const shared = commonPrefix(json.ids, segments[i + 1]!.ids);
    return {
      ended_because: s.endedBecause,
      shared_prefix: shared,
      trajectory: { ...json, ids: json.ids.slice(shared) },
      ...(s.messages ? { messages: s.messages } : {}),
    };
  });
}

/** A prior segment in a trajectory line: its ids after the `shared_prefix` it has with the next segment. */
export interface PriorSegmentRecord {
  readonly ended_because: string;
  readonly shared_prefix?: number;
  readonly trajectory: TrajectoryJSON;
  /** The built-in agent: the conversation the segment rendered, through its last reply (chat-template messages). */
  readonly messages?: readonly ChatMessage[];
}

/**
 * The prior segments of a trajectory line with their whole ids, rebuilt from the next segment's
 * (the last from the line's own trajectory).
 */
export function restorePriorSegments(
  prior: readonly PriorSegmentRecord[],
  trajectory: TrajectoryJSON,
): {
  readonly endedBecause: string;
  readonly trajectory: TrajectoryJSON;
  readonly messages?: readonly ChatMessage[];
}[] {
  const restored: { endedBecause: string; trajectory: TrajectoryJSON; messages?: readonly ChatMessage[] }[] = [];
  let next = trajectory;
  for (let i = prior.length - 1; i >= 0; i--) {
    const record = prior[i]!;
    const ids = [...next.ids.slice(0, record.shared_prefix ?? 0), ...record.trajectory.ids];
    next = { ...record.trajectory, ids };
    restored.unshift({
      endedBecause: record.ended_because,
      trajectory: next,
      ...(record.messages ? { messages: record.messages } : {}),
    });
  }
  return restored;
}

function commonPrefix(a: readonly number[], b: readonly number[]): number {
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  return n;
}

/** One line of trajectories/step-NNNNN.jsonl: what the agent did, token by token, and how it scored. */
export function trajectoryRecord(rollout: Rollout, step: number, advantage: number | null): Record<string, unknown> {
  const { episode } = rollout;
  return {
    step,
    group: rollout.group,
    sample: rollout.sample,
    task_id: rollout.task.id,
    policy_version: rollout.policyVersion,
    reward: rollout.reward,
    reward_parts: rollout.parts,
    ...(rollout.rewardInfo ? { reward_info: rollout.rewardInfo } : {}),
    success: rollout.success,
    advantage,
    failed: rollout.failed,
    ...(rollout.error ? { error: rollout.error } : {}),
    ...(rollout.errorKind ? { error_kind: rollout.errorKind } : {}),
    finish_reason: episode.finishReason,
    stats: episode.stats,
    messages: episode.messages,
    trajectory: episode.trajectory.toJSON(),
    ...(episode.priorSegments ? { prior_segments: priorSegmentRecords(episode) } : {}),
    ...(episode.segmentMessages ? { segment_messages: episode.segmentMessages } : {}),
    ...(episode.agentLog ? { agent_log: episode.agentLog } : {}),
    ...(episode.chatTools ? { tools: episode.chatTools } : {}),
  };
}
