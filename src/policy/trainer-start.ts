/**
 * Starting the trainer the same way for every engine kind: its launch options and load request from the
 * recipe, the loop's calls over its control API, and its facts for the run manifest.
 */
import { join } from 'node:path';
import type { ResolvedRecipe } from '../recipe/index.js';
import {
  trainConfigFromRecipe,
  type LaunchTrainerOptions,
  type LoadModelRequest,
  type LoadModelResponse,
  type TrainerClient,
  type TrainerProcess,
} from '../trainer/index.js';
import type { PolicyTrainer, StartPolicyOptions } from './policy.js';

/**
 * How the recipe's `model.trainer` starts the trainer process, for both engine paths: the Python search
 * ($ATK_PYTHON, then model.trainer.python, then python3), logs/trainer.log, the thread count, and the
 * trainer's own GPUs (CUDA_VISIBLE_DEVICES, and one torchrun rank each when there are several; the
 * engine's are set apart by the engine launcher), and for the embedded engine its batch and prefix cache.
 */
export function trainerLaunchOptions(
  recipe: ResolvedRecipe,
  options: Pick<StartPolicyOptions, 'logsDir' | 'runDir' | 'signal'>,
): LaunchTrainerOptions {
  const trainer = recipe.model.trainer;
  return {
    ...(trainer.python ? { recipePython: trainer.python } : {}),
    runDir: options.runDir,
    logFile: join(options.logsDir, 'trainer.log'),
    threads: trainer.threads,
    ...(recipe.model.engine.kind === 'embedded'
      ? { maxBatch: recipe.model.engine.max_batch_size, prefixCacheTokens: recipe.model.engine.prefix_cache_tokens }
      : {}),
    startupTimeoutMs: trainer.startup_timeout_s * 1000,
    callTimeoutMs: trainer.call_timeout_s * 1000,
    gpus: trainer.gpus,
    ...(options.signal ? { signal: options.signal } : {}),
  };
}

/** The trainer's `/control/load_model` request for a recipe's policy loaded from `modelDir`. */
export function loadModelRequest(recipe: ResolvedRecipe, modelDir: string): LoadModelRequest {
  return {
    path: modelDir,
    init: recipe.model.init,
    backend: recipe.model.trainer.backend,
    device: recipe.model.trainer.device,
    dtype: recipe.model.trainer.dtype,
    max_model_len: recipe.model.engine.max_model_len,
    train: trainConfigFromRecipe(recipe.algorithm, recipe.model.trainer, {
      seed: recipe.seed,
      totalSteps: recipe.train.steps * recipe.algorithm.updates_per_step,
      lossNormConstant: recipe.agent.max_new_tokens * recipe.agent.max_turns,
    }),
  };
}

/**
 * The loop's trainer calls over the trainer's control API. `afterLoad` runs once a checkpoint is restored,
 * with its policy version (a launched engine is synced to it before rollouts resume).
 */
export function trainerCalls(
  client: TrainerClient,
  afterLoad?: (policyVersion: number, dir: string) => Promise<void>,
): PolicyTrainer {
  return {
    trainStep: (batch) => client.trainStep({ loss: batch.loss, sequences: batch.sequences }),
    save: async (dir) => void (await client.save(dir)),
    async load(dir) {
      const version = (await client.loadCheckpoint(dir)).policy_version;
      await afterLoad?.(version, dir);
      return version;
    },
  };
}

/** What the run manifest records of the trainer and the policy it loaded. */
export function trainerFacts(process: TrainerProcess, loaded: LoadModelResponse): Readonly<Record<string, unknown>> {
  return {
    python: process.python,
    backend: loaded.backend,
    device: loaded.device,
    parameters: loaded.parameters,
    trainable_parameters: loaded.trainable_parameters,
  };
}
