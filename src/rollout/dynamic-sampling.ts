/**
 * One step's sampling from the data stream, with DAPO's dynamic sampling (Yu et al. 2025,
 * arXiv 2503.14476) when `algorithm.dynamic_sampling` is on: a group whose rewards are all equal has no
 * advantage to learn from, so the step keeps drawing new tasks and sampling their groups until it has
 * `train.tasks_per_step` groups with a reward spread, or `max_rounds` rounds have run; then it trains on
 * what it has. Each round draws only the shortfall, so a step never samples more groups than it could keep.
 */
import { hasRewardSpread } from '../algorithms/advantages.js';
import type { Task } from '../datasets/types.js';
import type { ScoredEpisode } from './curriculum.js';
import type { DataStream } from './data-stream.js';

/** What sampling needs of an episode: its task, reward and outcome. */
export type SampledEpisode = ScoredEpisode & { readonly reward: number };

export interface StepSamplingOptions<R extends SampledEpisode> {
  /** Groups a step trains on (`train.tasks_per_step`). */
  readonly batchSize: number;
  /** Rounds of dynamic sampling (`algorithm.dynamic_sampling.max_rounds`); absent = one round, every group kept. */
  readonly maxRounds?: number | undefined;
  /** `rollout.on_failure`: with `exclude`, failed episodes do not count towards a group's spread. */
  readonly onFailure: 'zero' | 'exclude';
  readonly stream: Pick<DataStream, 'draw' | 'record'>;
  /** Samples one group per task; `firstGroup` is the index of the first one within the step. */
  readonly run: (tasks: readonly Task[], firstGroup: number) => Promise<R[][]>;
}

/** A step's sampled groups and what dynamic sampling and the curriculum did. */
export interface SampledStep<R> {
  /** Every group sampled, in draw order: a group's index within the step is its place here. */
  readonly groups: R[][];
  /** The groups the step trains on: all of them, or with dynamic sampling those with a reward spread. */
  readonly kept: R[][];
  readonly rounds: number;
  /** Dynamic sampling ran its rounds out before it had `batchSize` groups with a spread. */
  readonly ranOut: boolean;
  /** Tasks the curriculum passed over while drawing this step's. */
  readonly skippedSolved: number;
  readonly skippedUnsolved: number;
}

/** Draws the step's tasks, samples their groups and, with dynamic sampling, refills until enough have a spread. */
export async function sampleStep<R extends SampledEpisode>(options: StepSamplingOptions<R>): Promise<SampledStep<R>> {
  const { batchSize, maxRounds, stream } = options;
  const groups: R[][] = [];
  const kept: R[][] = [];
  let rounds = 0;
  let skippedSolved = 0;
  let skippedUnsolved = 0;
  const spread = (group: readonly R[]): boolean =>
    hasRewardSpread(group.map((e) => ({ reward: e.reward, excluded: e.failed && options.onFailure === 'exclude' })));
  do {
    rounds++;
    const drawn = stream.draw(batchSize - kept.length);
    skippedSolved += drawn.skippedSolved;
    skippedUnsolved += drawn.skippedUnsolved;
    if (drawn.tasks.length === 0) break;
    const sampled = await options.run(drawn.tasks, groups.length);
    stream.record(sampled);
    groups.push(...sampled);
    kept.push(...(maxRounds === undefined ? sampled : sampled.filter(spread)));
  } while (maxRounds !== undefined && kept.length < batchSize && rounds < maxRounds);
  return {
    groups,
    kept,
    rounds,
    ranOut: maxRounds !== undefined && kept.length < batchSize,
    skippedSolved,
    skippedUnsolved,
  };
}
