import { describe, expect, it } from 'vitest';
import { batchBaseline, groupAdvantages, type ScoredEpisode } from './advantages.js';
import { PRESETS } from '../recipe/presets.js';

const episodes = (rewards: number[], excluded: number[] = []): ScoredEpisode[] =>
  rewards.map((reward, i) => ({ reward, excluded: excluded.includes(i), success: reward >= 1 }));

describe('groupAdvantages', () => {
  it('returns group-mean advantages over the unbiased group std for grpo, as torch.std (verl, TRL, slime)', () => {
    const { advantages, hasSignal } = groupAdvantages(episodes([1, 0, 0, 1]), PRESETS.grpo);
    expect(hasSignal).toBe(true);
    // mean 0.5, squared deviations 4 x 0.25 over n - 1 = 3: std sqrt(1/3)
    const std = Math.sqrt(1 / 3);
    expect(advantages).toStrictEqual([0.5, -0.5, -0.5, 0.5].map((d) => d / (std + 1e-6)));
  });

  it('returns advantages over the population std with std: population', () => {
    const { advantages } = groupAdvantages(episodes([1, 0, 0, 1]), { ...PRESETS.grpo, std: 'population' });
    expect(advantages).toStrictEqual([0.5, -0.5, -0.5, 0.5].map((d) => d / (0.5 + 1e-6)));
  });

  it('returns the unbiased std over the included episodes only, and 0 for a group of one', () => {
    // rewards 3, 1 (5 excluded): mean 2, std sqrt(2 / 1)
    const { advantages } = groupAdvantages(episodes([3, 1, 5], [2]), PRESETS.grpo);
    expect(advantages.slice(0, 2)).toStrictEqual([1 / (Math.SQRT2 + 1e-6), -1 / (Math.SQRT2 + 1e-6)]);
    expect(groupAdvantages(episodes([4]), PRESETS.grpo).advantages).toStrictEqual([0]);
  });

  it('returns unnormalised group-mean advantages for dr_grpo', () => {
    const { advantages } = groupAdvantages(episodes([1, 0, 0, 0]), PRESETS.dr_grpo);
    expect(advantages).toStrictEqual([0.75, -0.25, -0.25, -0.25]);
  });

  it('returns leave-one-out advantages for rloo', () => {
    const { advantages } = groupAdvantages(episodes([1, 0, 0]), PRESETS.rloo);
    expect(advantages).toStrictEqual([1, -0.5, -0.5]);
  });

  it('returns no signal when every reward is equal', () => {
    const { advantages, hasSignal } = groupAdvantages(episodes([1, 1, 1]), PRESETS.grpo);
    expect(hasSignal).toBe(false);
    expect(advantages.every((a) => Math.abs(a) < 1e-9)).toBe(true);
  });

  it('returns NaN for excluded episodes and ignores them in the baseline', () => {
    const { advantages, hasSignal } = groupAdvantages(episodes([1, 0, 5], [2]), PRESETS.dr_grpo);
    expect(hasSignal).toBe(true);
    expect(advantages[0]).toBe(0.5);
    expect(advantages[1]).toBe(-0.5);
    expect(Number.isNaN(advantages[2])).toBe(true);
  });

  it('returns raw rewards before the batch baseline for reinforce', () => {
    const { advantages } = groupAdvantages(episodes([1, 0]), PRESETS.reinforce);
    expect(advantages).toStrictEqual([1, 0]);
    expect(batchBaseline([1, 0, 1, 0])).toStrictEqual([0.5, -0.5, 0.5, -0.5]);
  });

  it('returns raw rewards under baseline none, as under batch_mean', () => {
    expect(groupAdvantages(episodes([1, 0]), { ...PRESETS.reinforce, baseline: 'none' }).advantages).toStrictEqual([
      1, 0,
    ]);
  });

  it('returns no signal for a group with one included episode, whatever its reward', () => {
    const { advantages, hasSignal } = groupAdvantages(episodes([1, 0, 0], [1, 2]), PRESETS.dr_grpo);
    expect(hasSignal).toBe(false);
    expect(advantages[0]).toBe(0);
  });

  it('returns 0 under leave_one_out for an episode with no other included episode to compare with', () => {
    expect(groupAdvantages(episodes([1, 0], [1]), PRESETS.rloo).advantages[0]).toBe(0);
  });

  it('returns advantages divided by the std plus epsilon under std_normalize', () => {
    // rewards 1 and 0: mean 0.5, unbiased std sqrt(0.5)
    expect(groupAdvantages(episodes([1, 0]), PRESETS.grpo).advantages).toStrictEqual([
      0.5 / (Math.sqrt(0.5) + 1e-6),
      -0.5 / (Math.sqrt(0.5) + 1e-6),
    ]);
  });
});

describe('batchBaseline', () => {
  it('returns the advantages less the mean of the kept ones, leaving excluded ones NaN', () => {
    expect(batchBaseline([1, Number.NaN, 3])).toStrictEqual([-1, Number.NaN, 1]);
  });
});
