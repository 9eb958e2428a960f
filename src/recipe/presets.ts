import type { AlgorithmConfig, RolloutConfig } from './schema.js';

/** The settings a preset decides; a recipe may still set any of them explicitly. */
export interface PresetSettings {
  readonly baseline: 'group_mean' | 'leave_one_out' | 'batch_mean' | 'none';
  readonly std_normalize: boolean;
  readonly loss_aggregation: 'token-mean' | 'seq-mean-token-sum' | 'seq-mean-token-mean' | 'seq-mean-token-sum-norm';
  readonly drop_zero_variance_groups: boolean;
}

/**
 * What each named algorithm means, written out so resolved.yaml shows it:
 * - grpo: group-mean baseline, std-normalised (DeepSeekMath), token-mean loss (DAPO-style).
 * - dr_grpo: no std normalisation and a constant length normaliser (Dr. GRPO, Liu et al. 2025).
 * - rloo: leave-one-out baseline, no std normalisation (Ahmadian et al. 2024).
 * - reinforce: batch-mean baseline; set baseline: none for plain REINFORCE.
 * - filtered_sft: cross-entropy on successful episodes only; no baseline, groups are not dropped.
 * - greedy_sft: filtered_sft on one greedy (temperature 0) episode per task: it trains on the answers eval
 *   decodes, where sampled RL learns from temperature-1 episodes eval never produces.
 * - sft: cross-entropy on the dataset's reference conversations (`task.data.reference`); no episodes are sampled.
 */
export const PRESETS: Readonly<Record<AlgorithmConfig['name'], PresetSettings>> = {
  grpo: {
    baseline: 'group_mean',
    std_normalize: true,
    loss_aggregation: 'token-mean',
    drop_zero_variance_groups: true,
  },
  dr_grpo: {
    baseline: 'group_mean',
    std_normalize: false,
    loss_aggregation: 'seq-mean-token-sum-norm',
    drop_zero_variance_groups: true,
  },
  rloo: {
    baseline: 'leave_one_out',
    std_normalize: false,
    loss_aggregation: 'token-mean',
    drop_zero_variance_groups: true,
  },
  reinforce: {
    baseline: 'batch_mean',
    std_normalize: false,
    loss_aggregation: 'token-mean',
    drop_zero_variance_groups: false,
  },
  filtered_sft: {
    baseline: 'none',
    std_normalize: false,
    loss_aggregation: 'token-mean',
    drop_zero_variance_groups: false,
  },
  greedy_sft: {
    baseline: 'none',
    std_normalize: false,
    loss_aggregation: 'token-mean',
    drop_zero_variance_groups: false,
  },
  sft: { baseline: 'none', std_normalize: false, loss_aggregation: 'token-mean', drop_zero_variance_groups: false },
};

/** Algorithms trained with cross-entropy on whole episodes (no advantages, loss `sft`). */
const CROSS_ENTROPY: ReadonlySet<AlgorithmConfig['name']> = new Set(['filtered_sft', 'greedy_sft', 'sft']);

/** Whether the algorithm trains with cross-entropy (the trainer's `sft` loss) rather than a policy gradient. */
export function trainsWithCrossEntropy(name: AlgorithmConfig['name']): boolean {
  return CROSS_ENTROPY.has(name);
}

/** An algorithm section with every preset-decided setting filled in. */
export type ResolvedAlgorithm = AlgorithmConfig & PresetSettings;

/**
 * Truncated importance sampling cap used when rollouts may be stale (`rollout.max_staleness` > 0): the lag
 * between the policy that sampled and the one that trains is corrected by a weight capped at 2 (AReaL's
 * decoupled PPO; TIS, Yao et al. 2025), and PPO's clip stays anchored at the behaviour logprobs, so a token
 * the trainer already moved past the clip range since it was sampled gets no gradient (without that anchor
 * k = 2 collapsed the quickstart).
 */
export const STALE_TIS_CAP = 2;

/**
 * Fill the preset's settings into whatever the recipe left unset; with stale rollouts allowed
 * (`maxStaleness` > 0) an unset `tis_cap` becomes STALE_TIS_CAP, so resolved.yaml names the correction.
 */
export function resolveAlgorithm(algorithm: AlgorithmConfig, maxStaleness = 0): ResolvedAlgorithm {
  const preset = PRESETS[algorithm.name];
  const staleCorrection = maxStaleness > 0 && algorithm.tis_cap === undefined && algorithm.name !== 'sft';
  return {
    ...algorithm,
    baseline: algorithm.baseline ?? preset.baseline,
    std_normalize: algorithm.std_normalize ?? preset.std_normalize,
    loss_aggregation: algorithm.loss_aggregation ?? preset.loss_aggregation,
    drop_zero_variance_groups: algorithm.drop_zero_variance_groups ?? preset.drop_zero_variance_groups,
    // greedy decoding gives one answer per task, so greedy_sft runs one episode per task whatever group_size says
    ...(algorithm.name === 'greedy_sft' ? { group_size: 1 } : {}),
    ...(staleCorrection ? { tis_cap: STALE_TIS_CAP } : {}),
  };
}

/**
 * The rollout settings the algorithm runs with: greedy_sft decodes as eval does (temperature 0, no
 * truncation), whatever rollout.temperature says, and resolved.yaml shows it.
 */
export function resolveRollout(rollout: RolloutConfig, algorithm: AlgorithmConfig['name']): RolloutConfig {
  return algorithm === 'greedy_sft' ? { ...rollout, temperature: 0, top_p: 1, top_k: -1 } : rollout;
}
