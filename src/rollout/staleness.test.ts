import { describe, expect, test } from 'vitest';
import { TokenTrajectory } from '../tokens/trajectory.js';
import type { Rollout } from './collect.js';
import type { EpisodeResult } from './episode.js';
import { filterStale, samplingVersion, stalenessOf } from './staleness.js';

/** A rollout whose model turns were sampled by `turnVersions` (none: an episode that failed before its first turn). */
function rollout(group: number, sample: number, startVersion: number, turnVersions: readonly number[]): Rollout {
  const trajectory = new TokenTrajectory();
  trajectory.appendEnvironment('prompt', [1, 2], 0);
  for (const [turn, version] of turnVersions.entries()) {
    // A tool result between turns, as in a real episode: adjacent model turns would merge into one segment.
    if (turn > 0) trajectory.appendEnvironment('tool', [5], turn);
    trajectory.appendModel([3, 4], [-0.5, -0.25], turn, version, 'stop');
  }
  const episode = { trajectory } as unknown as EpisodeResult;
  return {
    task: { id: `t${group}`, prompt: '', data: {} },
    group,
    sample,
    policyVersion: startVersion,
    reward: 1,
    parts: {},
    success: true,
    failed: false,
    episode,
  };
}

describe('samplingVersion', () => {
  test('returns the oldest turn version of a multi-turn episode that spans a sync, or the start version without turns', () => {
    expect([samplingVersion(rollout(0, 0, 2, [2, 3, 3])), samplingVersion(rollout(0, 1, 7, []))]).toStrictEqual([2, 7]);
  });

  test('returns the oldest turn version, neither the start version nor the first or last turn, read from the model segments', () => {
    // Started under 2, first sampled by 4 (the episode waited through syncs), then 3 on a lagging engine, then 5.
    expect(samplingVersion(rollout(0, 0, 2, [4, 3, 5]))).toBe(3);
    expect(stalenessOf(rollout(0, 0, 2, [4, 3, 5]), 6)).toBe(3);
  });

  test('returns the version a reference conversation (sft) was collected under, not the 0 its segments carry', () => {
    const reference = rollout(0, 0, 5, [0]);
    expect(samplingVersion({ ...reference, episode: { ...reference.episode, finishReason: 'reference' } })).toBe(5);
  });

  test('returns staleness against the trainer version, 0 for an episode sampled by a newer policy', () => {
    expect([stalenessOf(rollout(0, 0, 2, [2, 3]), 4), stalenessOf(rollout(0, 0, 5, [5]), 4)]).toStrictEqual([2, 0]);
  });
});

describe('filterStale', () => {
  test('returns every group when all episodes are within the bound, with mean and max staleness', () => {
    const groups = [
      [rollout(0, 0, 3, [3]), rollout(0, 1, 4, [4])],
      [rollout(1, 0, 4, [4]), rollout(1, 1, 4, [4])],
    ];
    const verdict = filterStale(groups, 4, 1);
    expect([verdict.kept.length, verdict.dropped.length, verdict.mean, verdict.max]).toStrictEqual([2, 0, 0.25, 1]);
  });

  test('drops a whole group when one episode has a turn older than the bound, keeping the others in order', () => {
    const stale = [rollout(1, 0, 2, [2, 4]), rollout(1, 1, 4, [4])];
    const groups = [[rollout(0, 0, 4, [4])], stale, [rollout(2, 0, 3, [3])]];
    const verdict = filterStale(groups, 4, 1);
    expect(verdict.kept.map((g) => g[0]!.group)).toStrictEqual([0, 2]);
    expect(verdict.dropped).toStrictEqual([stale]);
    expect([verdict.mean, verdict.max]).toStrictEqual([0.75, 2]);
  });

  test('drops any stale group at max_staleness 0, and returns zeros for an empty step', () => {
    expect(filterStale([[rollout(0, 0, 3, [3])]], 4, 0).dropped.length).toBe(1);
    expect(filterStale([], 4, 0)).toStrictEqual({ kept: [], dropped: [], mean: 0, max: 0 });
  });
});
