import type { PresetSettings } from '../recipe/presets.js';

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
 */
export function groupAdvantages(episodes: readonly ScoredEpisode[], settings: PresetSettings): GroupAdvantages {
  const included = episodes.filter((e) => !e.excluded).map((e) => e.reward);
  const n = included.length;
  const mean = n ? included.reduce((a, b) => a + b, 0) / n : 0;
  const variance = n ? included.reduce((a, r) => a + (r - mean) ** 2, 0) / n : 0;
  const hasSignal = n >= 2 && variance > EPS * EPS;
  const std = Math.sqrt(variance);
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

/** Subtract the mean advantage of all kept episodes in the batch (REINFORCE's batch-mean baseline). */
export function batchBaseline(advantages: readonly number[]): number[] {
  const kept = advantages.filter((a) => !Number.isNaN(a));
  const mean = kept.length ? kept.reduce((a, b) => a + b, 0) / kept.length : 0;
  return advantages.map((a) => (Number.isNaN(a) ? a : a - mean));
}
