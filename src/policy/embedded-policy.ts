import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createVllmClient } from '../engines/index.js';
import { ProviderError, TrainerError } from '../errors/index.js';
import type { ResolvedRecipe } from '../recipe/index.js';
import {
  launchTrainer,
  trainConfigFromRecipe,
  type LaunchTrainerOptions,
  type LoadModelRequest,
  type TrainerClient,
  type TrainerProcess,
} from '../trainer/index.js';
import type { PolicyTrainer, RunningPolicy, StartPolicyOptions } from './policy.js';

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

/**
 * The embedded engine: the bundled trainer serves generation from the very weights it trains, so
 * weight sync is a no-op beyond confirming the served policy version.
 * @throws TrainerError when the trainer cannot start or load the model.
 */
export async function startEmbeddedPolicy(options: StartPolicyOptions): Promise<RunningPolicy> {
  const { recipe } = options;
  const modelDir = resolveModelDir(recipe.model.path, options.recipeDir);
  const cluster = await options.place?.(recipe);
  const trainerProcess: TrainerProcess = await launchTrainer({
    ...trainerLaunchOptions(recipe, options),
    ...cluster?.trainer,
  }).catch(async (error: unknown) => {
    await cluster?.close();
    throw error;
  });
  const stop = async (graceMs?: number): Promise<void> => {
    await cluster?.close();
    await trainerProcess.stop(graceMs);
  };
  try {
    const loaded = await trainerProcess.client.loadModel(loadModelRequest(recipe, modelDir));
    const engine = createVllmClient({
      baseUrl: trainerProcess.engineUrl,
      model: loaded.model,
      timeoutMs: recipe.rollout.request_timeout_s * 1000,
    });
    const client = trainerProcess.client;
    const policy: RunningPolicy = {
      engine,
      trainer: trainerCalls(client),
      sync: {
        async sync(policyVersion) {
          const health = await client.health();
          if (health.policy_version !== policyVersion) {
            throw new ProviderError(
              `embedded engine serves policy ${health.policy_version}, expected ${policyVersion}`,
            );
          }
        },
      },
      facts: {
        engine: 'embedded',
        python: trainerProcess.python,
        backend: loaded.backend,
        device: loaded.device,
        parameters: loaded.parameters,
        trainable_parameters: loaded.trainable_parameters,
      },
      close: () => stop(),
    };
    return cluster ? cluster.guard(policy, trainerProcess, []) : policy;
  } catch (error) {
    await stop(1000);
    throw error;
  }
}

/**
 * How the recipe's `model.trainer` starts the trainer process, for both engine paths: the Python search
 * ($ATK_PYTHON, then model.trainer.python, then python3), logs/trainer.log, the thread count, and the
 * trainer's own GPUs (CUDA_VISIBLE_DEVICES, and one torchrun rank each when there are several; the
 * engine's are set apart by the engine launcher).
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
    ...(recipe.model.engine.kind === 'embedded' ? { maxBatch: recipe.model.engine.max_batch_size } : {}),
    startupTimeoutMs: trainer.startup_timeout_s * 1000,
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
 * A recipe's model path: a local directory (relative to the recipe, then the current directory), or
 * a hub id, which the embedded engine cannot fetch.
 * @throws TrainerError naming both places looked in.
 */
export function resolveModelDir(path: string, recipeDir: string): string {
  for (const candidate of [resolve(recipeDir, path), resolve(path)]) {
    if (existsSync(join(candidate, 'config.json'))) return candidate;
  }
  throw new TrainerError(`model.path: no config.json in ${resolve(recipeDir, path)}`, undefined, {
    hint: 'the embedded engine loads a local Hugging Face directory; download hub models first (or use a vllm engine)',
  });
}
