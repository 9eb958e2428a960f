import type { MismatchConfig } from './objective-schemas.js';
import type { AlgorithmConfig, RolloutConfig } from './schema.js';

/** The settings a preset decides; a recipe may still set any of them explicitly. */
export interface PresetSettings {
  readonly baseline: 'group_mean' | 'leave_one_out' | 'batch_mean' | 'none';
  readonly std_normalize: boolean;
  readonly loss_aggregation: NonNullable<AlgorithmConfig['loss_aggregation']>;
  readonly drop_zero_variance_groups: boolean;
  readonly clip_low: number;
  readonly clip_high: number;
}

/** PPO's clip range with DAPO's clip-higher, the default of every token-ratio preset. */
const PPO_CLIP = { clip_low: 0.2, clip_high: 0.28 } as const;

/**
 * What each named algorithm means, written out so resolved.yaml shows it:
 * - grpo: group-mean baseline, std-normalised (DeepSeekMath), token-mean loss (DAPO-style).
 * - dr_grpo: no std normalisation and a constant length normaliser (Dr. GRPO, Liu et al. 2025).
 * - rloo: leave-one-out baseline, no std normalisation (Ahmadian et al. 2024).
 * - reinforce: batch-mean baseline, the loss -A log pi (no ratio, no clip); set baseline: none for plain REINFORCE.
 * - gspo: GRPO's group-normalised advantages with a sequence-level ratio clipped at [1 - 3e-4, 1 + 4e-4] and
 *   seq-mean-token-mean aggregation (Zheng et al. 2025, arXiv 2507.18071, section 5.1's settings).
 * - cispo: GRPO's advantages, REINFORCE weighted by the clipped, detached ratio, token-mean (MiniMax-M1, arXiv
 *   2506.13585): no lower clip (clip_low 1), only clip_high tuned; the paper gives no number, 4 is ScaleRL's range.
 * - distill: on-policy distillation; each token's advantage is log pi_teacher - log pi_student, plus
 *   algorithm.distill.reward_weight times the GRPO group advantage; no group is dropped.
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
    ...PPO_CLIP,
  },
  dr_grpo: {
    baseline: 'group_mean',
    std_normalize: false,
    loss_aggregation: 'seq-mean-token-sum-norm',
    drop_zero_variance_groups: true,
    ...PPO_CLIP,
  },
  rloo: {
    baseline: 'leave_one_out',
    std_normalize: false,
    loss_aggregation: 'token-mean',
    drop_zero_variance_groups: true,
    ...PPO_CLIP,
  },
  gspo: {
    baseline: 'group_mean',
    std_normalize: true,
    loss_aggregation: 'seq-mean-token-mean',
    drop_zero_variance_groups: true,
    clip_low: 3e-4,
    clip_high: 4e-4,
  },
  cispo: {
    baseline: 'group_mean',
    std_normalize: true,
    loss_aggregation: 'token-mean',
    drop_zero_variance_groups: true,
    clip_low: 1,
    clip_high: 4,
  },
  // every group trains: the teacher's per-token signal needs no reward spread
  distill: {
    baseline: 'group_mean',
    std_normalize: true,
    loss_aggregation: 'token-mean',
    drop_zero_variance_groups: false,
    ...PPO_CLIP,
  },
  reinforce: {
    baseline: 'batch_mean',
    std_normalize: false,
    loss_aggregation: 'token-mean',
    drop_zero_variance_groups: false,
    ...PPO_CLIP,
  },
  filtered_sft: {
    baseline: 'none',
    std_normalize: false,
    loss_aggregation: 'token-mean',
    drop_zero_variance_groups: false,
    ...PPO_CLIP,
  },
  greedy_sft: {
    baseline: 'none',
    std_normalize: false,
    loss_aggregation: 'token-mean',
    drop_zero_variance_groups: false,
    ...PPO_CLIP,
  },
  sft: {
    baseline: 'none',
    std_normalize: false,
    loss_aggregation: 'token-mean',
    drop_zero_variance_groups: false,
    ...PPO_CLIP,
  },
};

/** Algorithms trained with cross-entropy on whole episodes (no advantages, loss `sft`). */
const CROSS_ENTROPY: ReadonlySet<AlgorithmConfig['name']> = new Set(['filtered_sft', 'greedy_sft', 'sft']);

/** Whether the algorithm trains with cross-entropy (the trainer's `sft` loss) rather than a policy gradient. */
export function trainsWithCrossEntropy(name: AlgorithmConfig['name']): boolean {
  return CROSS_ENTROPY.has(name);
}

/** The mismatch correction with its bounds filled in. */
export type ResolvedMismatch = Required<MismatchConfig>;

/**
 * An algorithm section with every preset-decided setting filled in; `tis_cap` is folded into `mismatch`, so
 * the resolved recipe names one correction.
 */
export type ResolvedAlgorithm = Omit<AlgorithmConfig, 'mismatch' | 'tis_cap'> &
  PresetSettings & { readonly mismatch?: ResolvedMismatch; readonly tis_cap?: undefined };

/** The surrogate the trainer's policy-gradient loss uses (its `policy_loss`): GSPO's, CISPO's, REINFORCE's, else PPO's. */
export function policyLoss(name: AlgorithmConfig['name']): 'ppo' | 'gspo' | 'cispo' | 'reinforce' {
  return name === 'gspo' || name === 'cispo' || name === 'reinforce' ? name : 'ppo';
}

/**
 * Truncated importance sampling bound used when rollouts may be stale (`rollout.max_staleness` > 0): the lag
 * between the policy that sampled and the one that trains is corrected by a weight capped at 2 (AReaL's
 * decoupled PPO; TIS, Yao et al. 2025), and PPO's clip stays anchored at the behaviour logprobs, so a token
 * the trainer already moved past the clip range since it was sampled gets no gradient (without that anchor
 * k = 2 collapsed the quickstart).
 */
export const STALE_TIS_CAP = 2;

/**
 * Fill the preset's settings into whatever the recipe left unset; `tis_cap: C` becomes
 * `mismatch: {mode: tis, level: token, low: 0, high: C, trust_region}`, and with stale rollouts allowed
 * (`maxStaleness` > 0) an unset correction becomes that with STALE_TIS_CAP, so resolved.yaml names the
 * correction. `trust_region` is true there under PPO's loss (the only one it acts on).
 */
export function resolveAlgorithm(algorithm: AlgorithmConfig, maxStaleness = 0): ResolvedAlgorithm {
  const preset = PRESETS[algorithm.name];
  const { tis_cap, mismatch: given, ...rest } = algorithm;
  const stale = maxStaleness > 0 && algorithm.name !== 'sft' ? STALE_TIS_CAP : undefined;
  const cap = tis_cap ?? (given === undefined ? stale : undefined);
  const mismatch =
    given ??
    (cap === undefined
      ? undefined
      : {
          mode: 'tis' as const,
          level: 'token' as const,
          high: cap,
          masked_tokens: 'count' as const,
          trust_region: policyLoss(algorithm.name) === 'ppo',
        });
  return {
    ...rest,
    clip_low: algorithm.clip_low ?? preset.clip_low,
    clip_high: algorithm.clip_high ?? preset.clip_high,
    ...(mismatch ? { mismatch: resolveMismatch(mismatch) } : {}),
    baseline: algorithm.baseline ?? preset.baseline,
    std_normalize: algorithm.std_normalize ?? preset.std_normalize,
    loss_aggregation: algorithm.loss_aggregation ?? preset.loss_aggregation,
    drop_zero_variance_groups: algorithm.drop_zero_variance_groups ?? preset.drop_zero_variance_groups,
    // greedy decoding gives one answer per task, so greedy_sft runs one episode per task whatever group_size says
    ...(algorithm.name === 'greedy_sft' ? { group_size: 1 } : {}),
    ...(algorithm.name === 'distill' ? { distill: { reward_weight: algorithm.distill?.reward_weight ?? 0 } } : {}),
  };
}

/**
 * What a mismatch correction leaves unset: tis clips only from above (low 0), mask and reject keep [0.5, 2];
 * no trust region at the engine's logprobs unless asked for.
 */
export function resolveMismatch(mismatch: MismatchConfig): ResolvedMismatch {
  return {
    mode: mismatch.mode,
    level: mismatch.level,
    low: mismatch.low ?? (mismatch.mode === 'tis' ? 0 : 0.5),
    high: mismatch.high ?? STALE_TIS_CAP,
    masked_tokens: mismatch.masked_tokens,
    trust_region: mismatch.trust_region ?? false,
  };
}

/**
 * The rollout settings the algorithm runs with: greedy_sft decodes as eval does (temperature 0, no
 * truncation), whatever rollout.temperature says, and resolved.yaml shows it.
 */
export function resolveRollout(rollout: RolloutConfig, algorithm: AlgorithmConfig['name']): RolloutConfig {
  return algorithm === 'greedy_sft' ? { ...rollout, temperature: 0, top_p: 1, top_k: -1 } : rollout;
}
