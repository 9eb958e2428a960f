import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TINY_ARITH_IM_END } from '../__fixtures__/embedded-engine.js';
import { describeEngineConformance } from '../__fixtures__/engine-conformance.js';
import {
  LAUNCHED_TEST_TIMEOUT_MS,
  launchedVllmEngine,
  REAL_VLLM,
  TINY_ARITH_MODEL,
} from '../__fixtures__/launched-vllm.js';
import { tempDirs } from '../__fixtures__/temp-dirs.js';
import { ProviderError } from '../errors/index.js';
import { launchTrainer } from '../trainer/index.js';
import { projectRoot } from '../util/paths.js';
import { launchEngines, type LaunchedEngines } from './launch/index.js';
import { createEngineSync } from './sync/index.js';
import type { Engine, Generation } from './types.js';
import { createVllmClient } from './vllm.js';

// vLLM launched by atk as a recipe launches it, serving models/tiny-arith with atk's worker extension:
// the stand-in in the fast suite, real vLLM under `npm run test:vllm` (src/__fixtures__/launched-vllm.ts).
// One server for the file: the protocol conformance suite, then full-weight syncs checked against the
// bundled trainer serving the same weights.
const tempDir = tempDirs('atk-launched-vllm-');
const dir = tempDir();
const PROMPT = [352, 10, 11, 12, 40, 41, 42, 100, 200, 300, 17, 23, 5, 250, 99];
const GREEDY = { maxTokens: 12, temperature: 0, topP: 1, topK: -1 };

let launching: Promise<LaunchedEngines> | undefined;
/** The one server of this file, launched on first use. */
function launched(): Promise<LaunchedEngines> {
  delete process.env.ATK_STANDIN_INIT; // the stand-in loads tiny-arith's weights, as vLLM does
  launching ??= launchEngines({
    kind: 'vllm',
    config: launchedVllmEngine(),
    model: TINY_ARITH_MODEL,
    logsDir: join(dir, 'logs'),
    requestTimeoutMs: 120_000,
  });
  return launching;
}
afterAll(async () => (await launching?.catch(() => undefined))?.stop(), LAUNCHED_TEST_TIMEOUT_MS);

describeEngineConformance(REAL_VLLM ? 'real vLLM launched by atk' : 'the vLLM stand-in launched by atk', async () => ({
  engine: (await launched()).engine,
  promptIds: [352, 10, 20, 30],
  stopTokenIds: [TINY_ARITH_IM_END],
  close: () => Promise.resolve(), // the afterAll above stops it
}));

describe('full-weight sync into launched vLLM', () => {
  let engines: LaunchedEngines;
  beforeAll(async () => {
    engines = await launched();
    // Every tensor moved by 5% of its spread (the embedding, tied to the output, too), and the same less one.
    const script = [
      'import os, shutil, sys, torch',
      'from atk_trainer.model.safetensors_io import load_file, save_file',
      'src, out = sys.argv[1:3]',
      'base = load_file(os.path.join(src, "model.safetensors"))',
      'g = torch.Generator().manual_seed(0)',
      'moved = {k: v + 0.05 * v.std() * torch.randn(v.shape, generator=g) for k, v in base.items()}',
      'for name, tensors in (("moved", moved), ("partial", {k: v for k, v in moved.items() if "layers.2.mlp.down_proj" not in k})):',
      '    os.makedirs(os.path.join(out, name))',
      '    shutil.copy(os.path.join(src, "config.json"), os.path.join(out, name))',
      '    save_file(tensors, os.path.join(out, name, "model.safetensors"))',
    ].join('\n');
    await execa('/usr/bin/python3', ['-c', script, TINY_ARITH_MODEL, dir], {
      env: { PYTHONPATH: join(projectRoot(), 'trainer') },
    });
  }, LAUNCHED_TEST_TIMEOUT_MS);

  test(
    "returns the trainer's tokens and logprobs on the new weights after a sync, and refuses a checkpoint that lacks a tensor",
    async () => {
      const reference = await trainerServing(join(dir, 'moved'));
      try {
        const expected = await reference.engine.generate(PROMPT, GREEDY);
        let written = join(dir, 'moved');
        const sync = createEngineSync({
          mode: 'full',
          protocol: 'vllm',
          engine: engines.engine,
          replicaUrls: engines.processes.map((p) => p.baseUrl),
          writePolicy: (target) => cp(written, target, { recursive: true }),
        });
        await sync.check();
        expect(gap(await engines.engine.generate(PROMPT, GREEDY), expected)).toBeGreaterThan(1e-2);
        await sync.sync(1, join(dir, 'checkpoints', 'step-00001'));
        // Tokens identical, logprobs as close as two float32 implementations get (the output layer, tied
        // to the embedding, included: a stale copy of it was off by up to 0.35).
        const served = await engines.engine.generate(PROMPT, GREEDY);
        expect(served.tokenIds).toStrictEqual(expected.tokenIds);
        expect(gap(served, expected)).toBeLessThan(1e-4);

        written = join(dir, 'partial');
        const refused = await sync.sync(2, join(dir, 'checkpoints', 'step-00002')).catch((e: unknown) => e);
        expect(refused).toBeInstanceOf(ProviderError);
        expect((refused as Error).message).toMatch(
          /\/collective_rpc answered 500: .*model\.layers\.2\.mlp\.down_proj\.weight/,
        );
        expect(sync.served).toBe('policy@1');
        expect(gap(await engines.engine.generate(PROMPT, GREEDY), expected)).toBeLessThan(1e-4);
      } finally {
        await reference.stop();
      }
    },
    LAUNCHED_TEST_TIMEOUT_MS,
  );
});

/** The largest logprob gap between two greedy generations of the same tokens; Infinity when the tokens differ. */
function gap(a: Generation, b: Generation): number {
  if (a.tokenIds.join() !== b.tokenIds.join()) return Number.POSITIVE_INFINITY;
  return Math.max(...a.logprobs.map((lp, i) => Math.abs(lp - b.logprobs[i]!)));
}

/** The bundled trainer's embedded engine serving the checkpoint in `path` (float32, on CPU). */
async function trainerServing(path: string): Promise<{ engine: Engine; stop(): Promise<void> }> {
  const trainer = await launchTrainer({
    logFile: join(tempDir(), 'trainer.log'),
    threads: 1,
    startupTimeoutMs: 120_000,
  });
  try {
    await trainer.client.loadModel({ path, backend: 'builtin', device: 'cpu', dtype: 'float32', train: { seed: 0 } });
  } catch (error) {
    await trainer.stop();
    throw error;
  }
  return { engine: createVllmClient({ baseUrl: trainer.engineUrl, model: 'policy' }), stop: () => trainer.stop() };
}
