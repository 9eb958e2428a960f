import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeEngineConformance } from '../__fixtures__/engine-conformance.js';
import { launchTrainer } from '../trainer/index.js';
import { projectRoot } from '../util/paths.js';
import { createVllmClient } from './vllm.js';

// The vLLM client's conformance suite against the real embedded engine: `python -m atk_trainer`
// serving the shipped tiny-arith model (random init), as `engine: embedded` runs it.
const MODEL_DIR = join(projectRoot(), 'models', 'tiny-arith');
const IM_END = 354; // eos_token_id of models/tiny-arith/config.json

async function startEmbedded(): Promise<{ url: string; stop: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'atk-embedded-'));
  const trainer = await launchTrainer({ logFile: join(dir, 'trainer.log'), threads: 1, startupTimeoutMs: 60_000 });
  try {
    await trainer.client.loadModel({ path: MODEL_DIR, init: 'random', backend: 'builtin', device: 'cpu', dtype: 'float32', train: { seed: 0 } });
  } catch (error) {
    await trainer.stop();
    throw error;
  }
  return { url: trainer.engineUrl, stop: () => trainer.stop() };
}

describeEngineConformance('vllm client against the embedded engine', async () => {
  const embedded = await startEmbedded();
  return { engine: createVllmClient({ baseUrl: embedded.url, model: 'policy' }), promptIds: [352, 10, 20, 30], stopTokenIds: [IM_END], close: embedded.stop };
});
