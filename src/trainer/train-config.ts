import {
  policyLoss,
  trainsWithCrossEntropy,
  type ResolvedAlgorithm,
  type ResolvedMismatch,
} from '../recipe/presets.js';
import type { AlgorithmConfig, TrainerConfig } from '../recipe/schema.js';

/**
 * The Python trainer's TrainConfig (trainer/atk_trainer/train/config.py) as JSON: same snake_case keys
 * as the recipe. Every key is optional; the trainer rejects unknown keys and wrong types.
 */
export interface TrainConfigInput {
  readonly loss?: 'pg' | 'sft';
  readonly loss_aggregation?: ResolvedAlgorithm['loss_aggregation'];
  readonly loss_norm_constant?: number | null;
  readonly clip_low?: number;
  readonly clip_high?: number;
  readonly policy_loss?: ReturnType<typeof policyLoss>;
  /** Dual-clip PPO's c (recipe `algorithm.dual_clip`); null = off. */
  readonly dual_clip?: number | null;
  /** The trainer/engine mismatch correction (recipe `algorithm.mismatch`, resolved); null = off. */
  readonly mismatch?: ResolvedMismatch | null;
  readonly kl_coef?: number;
  readonly kl_estimator?: AlgorithmConfig['kl_estimator'];
  readonly learning_rate?: number;
  readonly lr_schedule?: 'constant' | 'cosine';
  readonly warmup_steps?: number;
  readonly total_steps?: number;
  readonly weight_decay?: number;
  readonly adam_beta1?: number;
  readonly adam_beta2?: number;
  readonly adam_eps?: number;
  readonly grad_clip?: number;
  /** null = chosen by the trainer, from free memory (GPU on CUDA, available RAM on CPU). */
  readonly micro_batch_tokens?: number | null;
  readonly pack_sequences?: boolean;
  readonly updates_per_step?: number;
  readonly lora?: {
    readonly rank?: number;
    readonly alpha?: number;
    readonly dropout?: number;
    readonly target_modules?: readonly string[];
    readonly layers_to_transform?: readonly number[];
  } | null;
  readonly device?: 'auto' | 'cpu' | 'cuda';
  readonly dtype?: 'auto' | 'float32' | 'bfloat16';
  readonly threads?: number;
  readonly gradient_checkpointing?: boolean;
  readonly compile?: boolean;
  readonly cuda_graphs?: boolean;
  readonly weights_dtype?: 'float32' | 'bfloat16';
  readonly seed?: number;
}

/** What the recipe does not say in `algorithm`/`model.trainer` but the trainer needs. */
export interface TrainConfigContext {
  readonly seed: number;
  /** Train steps of the run: the cosine schedule's length. */
  readonly totalSteps: number;
  /** Dr. GRPO's constant (the generation budget of one episode); omitted = the batch's longest trained span. */
  readonly lossNormConstant?: number;
}

/**
 * The trainer config for a recipe: the resolved `algorithm` (preset settings and the mismatch correction
 * filled in) and `model.trainer` mapped key for key; sft-style algorithms default to the cross-entropy loss,
 * gspo and cispo name their policy loss.
 */
export function trainConfigFromRecipe(
  algorithm: ResolvedAlgorithm,
  trainer: TrainerConfig,
  context: TrainConfigContext,
): TrainConfigInput {
  return {
    loss: trainsWithCrossEntropy(algorithm.name) ? 'sft' : 'pg',
    policy_loss: policyLoss(algorithm.name),
    loss_aggregation: algorithm.loss_aggregation,
    loss_norm_constant: context.lossNormConstant ?? null,
    clip_low: algorithm.clip_low,
    clip_high: algorithm.clip_high,
    dual_clip: algorithm.dual_clip ?? null,
    mismatch: algorithm.mismatch ?? null,
    kl_coef: algorithm.kl_coef,
    kl_estimator: algorithm.kl_estimator,
    learning_rate: algorithm.learning_rate,
    lr_schedule: algorithm.lr_schedule,
    warmup_steps: algorithm.warmup_steps,
    total_steps: context.totalSteps,
    weight_decay: algorithm.weight_decay,
    grad_clip: algorithm.grad_clip,
    micro_batch_tokens: algorithm.micro_batch_tokens === 'auto' ? null : algorithm.micro_batch_tokens,
    pack_sequences: algorithm.pack_sequences,
    updates_per_step: algorithm.updates_per_step,
    lora: algorithm.lora ?? null,
    device: trainer.device,
    dtype: trainer.dtype,
    threads: trainer.threads,
    gradient_checkpointing: trainer.gradient_checkpointing,
    compile: trainer.compile,
    cuda_graphs: trainer.cuda_graphs,
    weights_dtype: trainer.weights_dtype,
    seed: context.seed,
  };
}
