import { describe, expect, test } from 'vitest';
import { AlgorithmSchema } from '../recipe/schema.js';
import { resolveAlgorithm } from '../recipe/presets.js';
import { assembleBatch } from './batch.js';
import { distillAdvantages } from './distill.js';

describe('distillAdvantages', () => {
  const tokens = {
    token_ids: [1, 2, 3, 4, 5],
    loss_mask: [0, 0, 1, 0, 1],
    logprobs: [0, 0, -0.5, 0, -2],
  };

  test('returns teacher minus student logprob on generated tokens, the task term added, 0 elsewhere', () => {
    const result = distillAdvantages(tokens, [null, -1, -0.25, -3, -1.5], 0.1);
    expect(result.advantages[0]).toBe(0);
    expect(result.advantages[1]).toBe(0);
    expect(result.advantages[2]).toBeCloseTo(-0.25 + 0.5 + 0.1, 12);
    expect(result.advantages[3]).toBe(0);
    expect(result.advantages[4]).toBeCloseTo(-1.5 + 2 + 0.1, 12);
    expect(result.reverseKlSum).toBeCloseTo(-0.5 + 0.25 + (-2 + 1.5), 12);
    expect(result.tokens).toBe(2);
  });

  test('returns zero advantages and no KL for a segment without generated tokens', () => {
    const none = { ...tokens, loss_mask: [0, 0, 0, 0, 0] };
    expect(distillAdvantages(none, [null, -1, -1, -1, -1], 0.5)).toStrictEqual({
      advantages: [0, 0, 0, 0, 0],
      reverseKlSum: 0,
      tokens: 0,
    });
  });

  test('rejects teacher scores that do not cover every token, or leave a generated one unscored', () => {
    expect(() => distillAdvantages(tokens, [null, -1], 0)).toThrow(/2 of 5/);
    expect(() => distillAdvantages(tokens, [null, -1, null, -1, -1], 0)).toThrow(/token 2 unscored/);
  });
});

describe('assembleBatch with algorithm distill', () => {
  const algorithm = (rewardWeight: number) =>
    resolveAlgorithm({ ...AlgorithmSchema.parse({ name: 'distill' }), distill: { reward_weight: rewardWeight } });
  const member = (reward: number, teacher: (number | null)[]) => ({
    reward,
    success: reward > 0,
    excluded: false,
    tokens: { token_ids: [1, 2, 3], loss_mask: [0, 1, 1], logprobs: [0, -1, -2] },
    teacherLogprobs: [teacher],
  });

  test('returns per-token teacher advantages for a group whose rewards are all equal (no group dropped)', () => {
    const batch = assembleBatch([[member(1, [null, -0.5, -2.5]), member(1, [null, -1, -1])]], algorithm(0));
    expect(batch.droppedGroups).toBe(0);
    expect(batch.sequences.map((s) => s.advantages)).toStrictEqual([
      [0, 0.5, -0.5],
      [0, 0, 1],
    ]);
    expect(batch.advantages).toStrictEqual([[0, 0]]);
    expect(batch.distill).toStrictEqual({ reverseKl: (-0.5 + 0.5 + 0 - 1) / 4, tokens: 4 });
  });

  test('returns the reward-weighted group advantage added to every generated token', () => {
    const batch = assembleBatch([[member(1, [null, -1, -2]), member(0, [null, -1, -2])]], algorithm(0.5));
    // rewards 1 and 0: GRPO advantages +-0.5 / sqrt(0.5) (the unbiased std), times 0.5
    expect(batch.sequences[0]!.advantages![1]).toBeCloseTo(0.5 * Math.SQRT1_2, 5);
    expect(batch.sequences[1]!.advantages![2]).toBeCloseTo(-0.5 * Math.SQRT1_2, 5);
    expect(batch.sequences[0]!.advantages![0]).toBe(0);
  });

  test('returns each segment of a split episode scored on its own teacher logprobs, scaled by segment_weighting equal', () => {
    // Segments of 1 and 3 trained tokens under token-mean and equal weighting: each carries half of the
    // episode's 4 tokens, so the 1-token segment's advantages are x2 and the 3-token one's x2/3.
    const split = {
      reward: 1,
      success: true,
      excluded: false,
      priorTokens: [{ token_ids: [1, 2], loss_mask: [0, 1], logprobs: [0, -1] }],
      tokens: { token_ids: [1, 2, 3, 4], loss_mask: [0, 1, 1, 1], logprobs: [0, -1, -1, -1] },
      teacherLogprobs: [
        [null, -0.5],
        [null, -1, -0.25, -2.5],
      ],
    };
    const equal = resolveAlgorithm({
      ...AlgorithmSchema.parse({ name: 'distill', segment_weighting: 'equal' }),
      distill: { reward_weight: 0 },
    });
    const batch = assembleBatch([[split, member(1, [null, -1, -2])]], equal);
    expect(batch.sequences.map((s) => s.advantages)).toStrictEqual([
      [0, 1],
      [0, 0, 0.5, -1],
      [0, 0, 0],
    ]);
  });

  test('rejects an episode the teacher did not score', () => {
    const { teacherLogprobs: _, ...unscored } = member(1, []);
    expect(() => assembleBatch([[unscored]], algorithm(0))).toThrow(/without teacher scores/);
  });
});
