// The bundled trainer's embedded engine for tests: `python -m atk_trainer` serving the shipped
// models/tiny-arith on CPU, as `engine: embedded` runs it, spoken to with the vLLM client.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createVllmClient } from '../engines/vllm.js';
import type { Engine } from '../engines/types.js';
import { launchTrainer } from '../trainer/index.js';
import { projectRoot } from '../util/paths.js';

export const TINY_ARITH_DIR = join(projectRoot(), 'models', 'tiny-arith');
/** eos_token_id of models/tiny-arith/config.json (`<|im_end|>`). */
export const TINY_ARITH_IM_END = 354;

export interface EmbeddedEngine {
  readonly engine: Engine;
  stop(): Promise<void>;
}

/** Starts the trainer with tiny-arith loaded: its trained weights, or a random init from config.json. */
export async function startEmbeddedEngine(init: 'pretrained' | 'random'): Promise<EmbeddedEngine> {
  const dir = mkdtempSync(join(tmpdir(), 'atk-embedded-'));
  const trainer = await launchTrainer({ logFile: join(dir, 'trainer.log'), threads: 1, startupTimeoutMs: 60_000 });
  try {
    await trainer.client.loadModel({
      path: TINY_ARITH_DIR,
      init,
      backend: 'builtin',
      device: 'cpu',
      dtype: 'float32',
      train: { seed: 0 },
    });
  } catch (error) {
    await stop();
    throw error;
  }
  return { engine: createVllmClient({ baseUrl: trainer.engineUrl, model: 'policy' }), stop };

  /** Stops the trainer and removes its log directory: a test leaves nothing behind. */
  async function stop(): Promise<void> {
    await trainer.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
