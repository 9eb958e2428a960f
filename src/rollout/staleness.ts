/**
 * Policy-version bookkeeping for asynchronous rollouts: how many versions an episode lags the policy
 * that trains on it, and the filter that keeps only groups within `rollout.max_staleness` of it. (Which
 * policy the engine serves now is agent/policy-clock.ts.)
 */
import type { Rollout } from './collect.js';

/**
 * The oldest policy version that sampled any turn of the episode (turn-level versions are on the
 * trajectory's model segments); the version it started under when it produced no model turn, or when
 * no policy sampled it (`sft`'s reference conversations, whose segments carry version 0).
 */
export function samplingVersion(rollout: Rollout): number {
  if (rollout.episode.finishReason === 'reference') return rollout.policyVersion;
  let oldest = Infinity;
  for (const s of rollout.episode.trajectory.segments)
    if (s.source === 'model' && s.policyVersion !== undefined) oldest = Math.min(oldest, s.policyVersion);
  return Number.isFinite(oldest) ? oldest : rollout.policyVersion;
}

/** Versions between the oldest policy that sampled `rollout` and `trainerVersion`, the policy about to train on it (0 = on-policy). */
export function stalenessOf(rollout: Rollout, trainerVersion: number): number {
  return Math.max(0, trainerVersion - samplingVersion(rollout));
}

/** What the staleness filter kept and dropped in one step, with the figures metrics.jsonl records. */
export interface StalenessVerdict {
  /** Groups fit to train on, in their original order. */
  readonly kept: Rollout[][];
  /** Groups left out because one of their episodes was sampled more than `maxStaleness` versions back. */
  readonly dropped: Rollout[][];
  /** Mean and max staleness over every episode of the step, kept or not. */
  readonly mean: number;
  readonly max: number;
}

/**
 * Keeps a group only if every episode in it was sampled by a policy at most `maxStaleness` versions
 * older than `trainerVersion`: a group's advantages compare its episodes, so one too-stale member
 * drops the whole group rather than leaving a biased comparison.
 */
export function filterStale(
  groups: readonly Rollout[][],
  trainerVersion: number,
  maxStaleness: number,
): StalenessVerdict {
  const kept: Rollout[][] = [];
  const dropped: Rollout[][] = [];
  let sum = 0;
  let max = 0;
  let count = 0;
  for (const group of groups) {
    let groupMax = 0;
    for (const rollout of group) {
      const staleness = stalenessOf(rollout, trainerVersion);
      sum += staleness;
      count++;
      groupMax = Math.max(groupMax, staleness);
    }
    max = Math.max(max, groupMax);
    (groupMax > maxStaleness ? dropped : kept).push(group);
  }
  return { kept, dropped, mean: count ? sum / count : 0, max };
}
