import { existsSync } from 'node:fs';
import { rolloutTimeoutsMs } from './rollout-timeouts.js';
import { join, resolve } from 'node:path';
import { createVllmClient } from '../engines/index.js';
import { ProviderError, TrainerError } from '../errors/index.js';
import { launchTrainer, type TrainerProcess } from '../trainer/index.js';
import type { RunningPolicy, StartPolicyOptions } from './policy.js';
import { syncProbeFor } from './sync-probe.js';
import { guardLocalPolicy, trainerListener } from './local-watch.js';
import { loadModelRequest, trainerCalls, trainerFacts, trainerLaunchOptions } from './trainer-start.js';

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
    const requestTimeoutMs = rolloutTimeoutsMs(recipe.rollout, { engine: 'embedded', ...loaded }).request;
    const engine = createVllmClient({
      baseUrl: trainerProcess.engineUrl,
      model: loaded.model,
      // It speaks vLLM's protocol, but a timeout must not send the user looking for a vLLM server.
      name: 'embedded engine',
      timeoutMs: requestTimeoutMs,
    });
    const client = trainerProcess.client;
    const { probe, facts } = syncProbeFor(recipe, {
      engine: 'embedded',
      protocol: 'vllm',
      replicas: [trainerProcess.engineUrl],
      baseModel: loaded.model,
      trainer: client,
      modelDir,
      trainerDevice: loaded.device,
      engineDtype: 'trainer',
      requestTimeoutMs,
    });
    // The decode path (KV cache, static decode, a bf16 serving copy on CUDA) is checked against the
    // trainer's forward, once now (which also primes the prefix cache with the probe) and after every step.
    if (options.loadsWeights !== false) await probe.verify(loaded.policy_version, loaded.model);
    let lastProbe: number | undefined;
    const policy: RunningPolicy = {
      engine,
      trainer: trainerCalls(client),
      sync: {
        async sync(policyVersion) {
          lastProbe = undefined;
          const health = await client.health();
          if (health.policy_version !== policyVersion) {
            throw new ProviderError(
              `embedded engine serves policy ${health.policy_version}, expected ${policyVersion}`,
            );
          }
          lastProbe = await probe.verify(policyVersion, loaded.model);
        },
        get lastProbe() {
          return lastProbe;
        },
      },
      facts: { engine: 'embedded', ...trainerFacts(trainerProcess, loaded), ...facts },
      close: () => stop(),
    };
    return cluster
      ? cluster.guard(policy, trainerProcess, [])
      : guardLocalPolicy(
          policy,
          [trainerListener(trainerProcess, 'trainer (it serves the embedded engine)')],
          recipe.cluster,
        );
  } catch (error) {
    await stop(1000);
    throw error;
  }
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
