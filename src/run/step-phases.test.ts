import { describe, expect, test } from 'vitest';
import { resolveAlgorithm } from '../recipe/presets.js';
import { AlgorithmSchema, RolloutSchema, type AlgorithmConfig, type RolloutConfig } from '../recipe/schema.js';
import type { Rollout } from '../rollout/collect.js';
import type { EpisodeResult } from '../rollout/episode.js';
import { TokenTrajectory } from '../tokens/trajectory.js';
import { advantages } from './step-phases.js';

/** The recipe sections `advantages` reads: rollout and algorithm. */
function scope(
  rollout: Partial<RolloutConfig>,
  name: AlgorithmConfig['name'] = 'dr_grpo',
): Parameters<typeof advantages>[0] {
  return {
    rollout: RolloutSchema.parse(rollout),
    algorithm: resolveAlgorithm(AlgorithmSchema.parse({ name })),
  };
}

/** Prompt [t, t+1], model [t+2, t+3], tool [t+4], model [t+5]: masks 0 0 1 1 0 1, sampled by `version`. */
function trajectory(t: number, version = 0): TokenTrajectory {
  const trajectory = new TokenTrajectory();
  trajectory.appendEnvironment('prompt', [t, t + 1], 0);
  trajectory.appendModel([t + 2, t + 3], [-0.5, -0.25], 0, version, 'stop');
  trajectory.appendEnvironment('tool', [t + 4], 1);
  trajectory.appendModel([t + 5], [-1], 1, version, 'stop');
  return trajectory;
}

/** The batch sequence `trajectory(t)` becomes. */
function sequence(
  t: number,
  advantage: number,
): {
  token_ids: number[];
  loss_mask: number[];
  logprobs: number[];
  advantage: number;
} {
  return {
    token_ids: [t, t + 1, t + 2, t + 3, t + 4, t + 5],
    loss_mask: [0, 0, 1, 1, 0, 1],
    logprobs: [0, 0, -0.5, -0.25, 0, -1],
    advantage,
  };
}

function rollout(
  sample: number,
  reward: number,
  episode: Partial<EpisodeResult> & { trajectory: TokenTrajectory },
  failed = false,
  group = 0,
): Rollout {
  return {
    task: { id: `t${group}`, prompt: '', data: {} },
    group,
    sample,
    policyVersion: 0,
    reward,
    parts: {},
    success: reward >= 1,
    failed,
    ...(failed ? { error: 'episode timed out' } : {}),
    episode: episode as EpisodeResult,
  };
}

describe('advantages', () => {
  // dr_grpo: advantage = reward - group mean (no std normalisation), so the numbers are exact.
  const group = (): Rollout[] => [
    rollout(0, 1, { trajectory: trajectory(10) }),
    rollout(1, 0.5, { trajectory: trajectory(20) }),
    rollout(2, 0, { trajectory: trajectory(30) }, true),
  ];

  test('returns a batch that trains a failed episode with reward 0 under on_failure: zero', () => {
    const { batch } = advantages(scope({ on_failure: 'zero' }), [group()], 0);
    expect(batch).toStrictEqual({
      loss: 'pg',
      sequences: [sequence(10, 0.5), sequence(20, 0), sequence(30, -0.5)],
      groups: 1,
      droppedGroups: 0,
      advantages: [[0.5, 0, -0.5]],
    });
  });

  test('returns a batch that leaves a failed episode out of its group under on_failure: exclude', () => {
    const { batch } = advantages(scope({ on_failure: 'exclude' }), [group()], 0);
    expect(batch).toStrictEqual({
      loss: 'pg',
      sequences: [sequence(10, 0.25), sequence(20, -0.25)],
      groups: 1,
      droppedGroups: 0,
      advantages: [[0.25, -0.25, null]],
    });
  });

  test('returns one sequence per segment of a rewritten history, each with the episode advantage', () => {
    // Segment 1 and 3 were sampled; segment 2 holds no model tokens (nothing to train).
    const noModel = new TokenTrajectory();
    noModel.appendEnvironment('prompt', [90, 91], 0);
    const rewritten = rollout(0, 1, {
      trajectory: trajectory(50),
      priorSegments: [
        { trajectory: trajectory(10), endedBecause: 'history trimmed or replaced' },
        { trajectory: noModel, endedBecause: 'history trimmed or replaced' },
        { trajectory: trajectory(30), endedBecause: 'history trimmed or replaced' },
      ],
    });
    const plain = rollout(1, 0, { trajectory: trajectory(70) });
    const { batch } = advantages(scope({}), [[rewritten, plain]], 0);
    expect(batch).toStrictEqual({
      loss: 'pg',
      sequences: [sequence(10, 0.5), sequence(30, 0.5), sequence(50, 0.5), sequence(70, -0.5)],
      groups: 1,
      droppedGroups: 0,
      advantages: [[0.5, -0.5]],
    });
  });

  test('returns segments of a successful rewritten episode as cross-entropy sequences under filtered_sft', () => {
    const rewritten = rollout(0, 1, {
      trajectory: trajectory(50),
      priorSegments: [{ trajectory: trajectory(10), endedBecause: 'history trimmed or replaced' }],
    });
    const { batch } = advantages(
      scope({}, 'filtered_sft'),
      [[rewritten, rollout(1, 0, { trajectory: trajectory(70) })]],
      0,
    );
    expect(batch).toStrictEqual({
      loss: 'sft',
      sequences: [sequence(10, 1), sequence(50, 1)],
      groups: 1,
      droppedGroups: 0,
      advantages: [[1, null]],
    });
  });

  test("returns per-token distillation advantages from the teacher's logprobs each rollout carries", () => {
    // Equal rewards: the group advantage is 0, so each generated token's advantage is teacher - student.
    const scored = (sample: number, t: number, teacher: (number | null)[]): Rollout => ({
      ...rollout(sample, 1, { trajectory: trajectory(t) }),
      teacherLogprobs: [teacher],
    });
    const { batch } = advantages(
      scope({}, 'distill'),
      [[scored(0, 10, [null, null, -0.5, -0.75, null, -0.5]), scored(1, 20, [null, null, 0, -0.25, null, -1])]],
      0,
    );
    expect(batch.sequences.map((s) => s.advantages)).toStrictEqual([
      [0, 0, 0, -0.5, 0, 0.5],
      [0, 0, 0.5, 0, 0, 0],
    ]);
  });

  test('returns a batch without the groups sampled more than max_staleness versions back', () => {
    const stale = [
      rollout(0, 1, { trajectory: trajectory(10, 1) }, false, 0),
      rollout(1, 0, { trajectory: trajectory(20, 1) }, false, 0),
    ];
    const fresh = [
      rollout(0, 1, { trajectory: trajectory(30, 2) }, false, 1),
      rollout(1, 0, { trajectory: trajectory(40, 3) }, false, 1),
    ];
    const result = advantages(scope({ max_staleness: 1 }), [stale, fresh], 3);
    expect([result.fresh.kept, result.fresh.dropped]).toStrictEqual([[fresh], [stale]]);
    expect(result.batch).toStrictEqual({
      loss: 'pg',
      sequences: [sequence(30, 0.5), sequence(40, -0.5)],
      groups: 1,
      droppedGroups: 0,
      advantages: [[0.5, -0.5]],
    });
  });
});
