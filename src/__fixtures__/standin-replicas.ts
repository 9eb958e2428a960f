// Two replicas of the bundled trainer's embedded engine launched as `vllm serve` with a LoRA slot, and
// a weight sync into them: the scenario embedded-standin.test.ts checks and bench/engines.ts times.
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { launchEngines, type EngineStartProgress, type LaunchedEngines } from '../engines/launch/index.js';
import { createEngineSync, type EngineSync } from '../engines/sync/index.js';
import { EngineSchema } from '../recipe/schema.js';
import { embeddedVllmCommand } from './engine-processes.js';
import { writeTinyAdapter, writeTinyModel } from './tiny-qwen2.js';

/**
 * Writes a tiny random model under `dir/tiny` and launches two stand-in replicas on "GPUs" 0 and 1, logs in
 * `dir/logs`: with a LoRA slot, or with `fullWeights` with atk's worker extension (full-weight syncs).
 */
export async function launchStandinReplicas(
  dir: string,
  onProgress?: (progress: EngineStartProgress) => void,
  fullWeights = false,
): Promise<LaunchedEngines> {
  const model = writeTinyModel(join(dir, 'tiny'));
  process.env.ATK_STANDIN_INIT = 'random';
  const config = EngineSchema.parse({
    kind: 'vllm',
    command: embeddedVllmCommand,
    replicas: 2,
    gpus: [0, 1],
    startup_timeout_s: 120,
  });
  return launchEngines({
    kind: 'vllm',
    config,
    model,
    ...(fullWeights ? {} : { lora: { rank: 8, targetModules: ['q_proj'] } }),
    logsDir: join(dir, 'logs'),
    requestTimeoutMs: 30_000,
    ...(onProgress ? { onProgress } : {}),
  });
}

/** A LoRA sync into the replicas whose every step writes (copies) one real adapter for the tiny model, made once under `dir`. */
export async function tinyAdapterSync(engines: LaunchedEngines, dir: string): Promise<EngineSync> {
  const adapter = await writeTinyAdapter(join(dir, 'tiny'), join(dir, 'adapter'));
  return createEngineSync({
    mode: 'lora',
    protocol: 'vllm',
    engine: engines.engine,
    replicaUrls: engines.processes.map((p) => p.baseUrl),
    writePolicy: (target) => cp(adapter, target, { recursive: true }),
  });
}
