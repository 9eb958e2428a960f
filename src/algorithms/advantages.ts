import type { PresetSettings } from '../recipe/presets.js';
import type { AlgorithmConfig } from '../recipe/schema.js';

/** What advantage estimation reads of the resolved algorithm. */
export type AdvantageSettings = Pick<PresetSettings, 'baseline' | 'std_normalize'> & {
  /** The group std's divisor: n - 1 (unbiased, as verl, TRL and slime) or n (population); absent = unbiased. */
  readonly std?: AlgorithmConfig['std'];
};

/** What an advantage estimator needs of one episode. */
export interface ScoredEpisode {
  readonly reward: number;
  /** Left out of advantage estimation and training (a failed episode with on_failure: exclude). */
  readonly excluded: boolean;
  readonly success: boolean;
}

/** Advantages of one group, and whether the group carries any learning signal. */
export interface GroupAdvantages {
  /** One per episode, NaN for excluded episodes. */
  readonly advantages: readonly number[];
  /** False when every (included) reward is equal, so every advantage is zero. */
  readonly hasSignal: boolean;
}

const EPS = 1e-6;

/**
 * Advantages within one group of episodes of the same task.
 * - group_mean: r - mean(r); leave_one_out: r - mean of the others (RLOO);
 * - none / batch_mean: r itself here (batch_mean is subtracted later over the whole batch by `batchBaseline`);
 * - std_normalize divides by the group's std (GRPO), which Dr. GRPO drops because it up-weights easy/hard groups.
 *   GRPO's paper does not say which std; `settings.std` picks n - 1 (unbiased: torch.std, as verl, TRL and slime
 *   compute it) or n (population). A group of one has no unbiased std: its std counts as 0.
 */
export function groupAdvantages(episodes: readonly ScoredEpisode[], settings: AdvantageSettings): GroupAdvantages {
  const { n, mean, variance } = includedMoments(episodes);
  const hasSignal = spread(n, variance);
  const unbiased = (settings.std ?? 'unbiased') === 'unbiased';
  const std = unbiased ? (n > 1 ? Math.sqrt((variance * n) / (n - 1)) : 0) : Math.sqrt(variance);
  const sum = mean * n;
  const advantages = episodes.map((e) => {
    if (e.excluded) return Number.NaN;
    let a: number;
    switch (settings.baseline) {
      case 'group_mean':
        a = e.reward - mean;
        break;
      case 'leave_one_out':
        a = n > 1 ? e.reward - (sum - e.reward) / (n - 1) : 0;
        break;
      case 'batch_mean':
      case 'none':
        a = e.reward;
        break;
    }
    return settings.std_normalize ? a / (std + EPS) : a;
  });
  return { advantages, hasSignal };
}

/**
 * Whether a group's included rewards differ (their variance is above EPS²): a group without a spread
 * gives every episode a zero advantage. What dynamic sampling keeps a group for.
 */
export function hasRewardSpread(episodes: readonly Pick<ScoredEpisode, 'reward' | 'excluded'>[]): boolean {
  const { n, variance } = includedMoments(episodes);
  return spread(n, variance);
}

/** Count, mean and (population) variance of the rewards of the episodes not excluded. */
function includedMoments(episodes: readonly Pick<ScoredEpisode, 'reward' | 'excluded'>[]): {
  n: number;
  mean: number;
  variance: number;
} {
  const included = episodes.filter((e) => !e.excluded).map((e) => e.reward);
  const n = included.length;
  const mean = n ? included.reduce((a, b) => a + b, 0) / n : 0;
  const variance = n ? included.reduce((a, r) => a + (r - mean) ** 2, 0) / n : 0;
  return { n, mean, variance };
}

function spread(n: number, variance: number): boolean {
  return n >= 2 && variance > EPS * EPS;
}

/** Subtract the mean advantage of all kept episodes in the batch (REINFORCE's batch-mean baseline). */
export function batchBaseline(advantages: readonly number[]): number[] {
  const kept = advantages.filter((a) => !Number.isNaN(a));
  const mean = kept.length ? kept.reduce((a, b) => a + b, 0) / kept.length : 0;
  return advantages.map((a) => (Number.isNaN(a) ? a : a - mean));
}
