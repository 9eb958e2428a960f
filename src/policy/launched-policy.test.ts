import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { writeModelWithWeights } from '../__fixtures__/tiny-qwen2.js';
import {
  alive,
  doubleEngineCommand,
  embeddedSglangCommand,
  processesRunning,
} from '../__fixtures__/engine-processes.js';
import { LAUNCHED_TEST_TIMEOUT_MS, launchedVllmSettings, TINY_ARITH_MODEL } from '../__fixtures__/launched-vllm.js';
import { createVllmClient } from '../engines/index.js';
import { createEngineSync } from '../engines/sync/index.js';
import { InputError, ProviderError } from '../errors/index.js';
import { resolveRecipe, type ResolvedRecipe } from '../recipe/resolve.js';
import { RecipeSchema } from '../recipe/schema.js';
import type { TrainBatchInput } from '../trainer/index.js';
import { projectRoot } from '../util/paths.js';
import { localModelDir } from '../util/hub-cache.js';
import { startPolicy } from './index.js';
import { engineProgressLines } from './launched-policy.js';
import type { RunningPolicy } from './policy.js';

// The real trainer process plus the vLLM under test (src/__fixtures__/launched-vllm.ts: the embedded engine
// launched as `vllm serve`, or real vLLM under npm run test:vllm) on tiny-arith's architecture with random
// weights: train a LoRA step, sync it into the engine as policy@1 through the trainer's own peft save.
const dir = mkdtempSync(join(tmpdir(), 'atk-launched-'));
const modelDir = join(dir, 'tiny');

function recipe(lora: boolean, kind: 'vllm' | 'sglang' = 'vllm'): ResolvedRecipe {
  return resolveRecipe(
    RecipeSchema.parse({
      name: 'launched',
      model: {
        path: modelDir,
        engine:
          kind === 'vllm'
            ? { kind, ...launchedVllmSettings() }
            : { kind, command: embeddedSglangCommand, startup_timeout_s: 120 },
        trainer: { device: 'cpu', backend: 'builtin', dtype: 'float32' },
      },
      reward: { name: 'math_answer' },
      algorithm: { learning_rate: 0.01, ...(lora ? { lora: { rank: 4, alpha: 8 } } : {}) },
    }),
    dir,
  );
}

/**
 * How far the launched engine's greedy completion of a fixed prompt is from the trainer's own embedded
 * engine, which serves the trained weights: the largest logprob gap, Infinity when the tokens differ.
 */
async function servedGap(policy: RunningPolicy, runDir: string): Promise<number> {
  const trainerUrl =
    /serving on (http:\/\/\S+)/.exec(readFileSync(join(runDir, 'logs', 'trainer.log'), 'utf8'))?.[1] ?? '';
  const trained = createVllmClient({ baseUrl: trainerUrl, model: 'policy', timeoutMs: 30_000 });
  const params = { maxTokens: 6, temperature: 0, topP: 1, topK: -1 };
  const [a, b] = await Promise.all([policy.engine.generate([1, 2, 3], params), trained.generate([1, 2, 3], params)]);
  if (a.tokenIds.join() !== b.tokenIds.join()) return Infinity;
  return Math.max(...a.logprobs.map((lp, i) => Math.abs(lp - b.logprobs[i])));
}

/** One pg train step on the protocol's example batch; resolves to the new policy version. */
async function trainOneStep(policy: RunningPolicy): Promise<number> {
  const batch = JSON.parse(
    readFileSync(join(projectRoot(), 'trainer', 'protocol', 'train_step.request.json'), 'utf8'),
  ) as TrainBatchInput;
  return (
    await policy.trainer.trainStep({ ...batch, loss: 'pg' } as Parameters<RunningPolicy['trainer']['trainStep']>[0])
  ).policyVersion;
}

describe('startLaunchedPolicy', () => {
  let policy: RunningPolicy | undefined;
  beforeAll(() => writeModelWithWeights(modelDir, TINY_ARITH_MODEL));
  afterAll(() => policy?.close());

  test(
    'returns a policy whose LoRA step the engine serves as policy@1 after sync, and close stops both processes',
    async () => {
      const runDir = join(dir, 'run');
      policy = await startPolicy({ recipe: recipe(true), recipeDir: dir, logsDir: join(runDir, 'logs'), runDir });
      expect(policy.facts).toMatchObject({
        engine: 'vllm',
        engine_replicas: 1,
        weight_sync: 'lora',
        backend: 'builtin',
        device: 'cpu',
      });
      expect(await trainOneStep(policy)).toBe(1);
      const before = await servedGap(policy, runDir);
      await policy.sync.sync(1, join(runDir, 'checkpoints', 'step-00001'));
      const adapter = join(runDir, 'checkpoints', 'sync', 'step-00001');
      expect(readdirSync(adapter).sort()).toStrictEqual(['adapter_config.json', 'adapter_model.safetensors']);
      expect([policy.engine.model, await policy.engine.models()]).toStrictEqual(['policy@1', ['policy', 'policy@1']]);
      // The engine samples from base + the trained adapter: what the trainer samples, as it did not before.
      expect([before > 1e-3, await servedGap(policy, runDir)]).toStrictEqual([true, expect.closeTo(0, 5)]);
      // Launched for LoRA, the engine has no weight-reload extension, like a user's own `vllm serve`: a full sync is refused.
      const full = createEngineSync({
        mode: 'full',
        protocol: 'vllm',
        engine: policy.engine,
        replicaUrls: [policy.engine.baseUrl],
        writePolicy: () => Promise.resolve(),
      });
      const error = await full.check().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ProviderError);
      expect((error as ProviderError).message).toMatch(
        /^vllm at http:\/\/127\.0\.0\.1:\d+ cannot reload full weights: vllm POST \/collective_rpc answered 500: .*atk_weight_version/,
      );
      expect((error as ProviderError).hint).toMatch(
        /^start it with VLLM_SERVER_DEV_MODE=1 PYTHONPATH=.+\/trainer'? vllm serve \.\.\. --worker-extension-cls atk_trainer\.vllm_worker\.WeightReload, or set algorithm\.lora$/,
      );
      // The same engine as a user's running server (url): training full weights is refused up front, while an
      // eval of the base model, which loads nothing into it, asks for no extension and starts.
      const url = (run: string, loadsWeights?: boolean) =>
        startPolicy({
          recipe: resolveRecipe(
            RecipeSchema.parse({
              name: 'url',
              model: {
                path: modelDir,
                engine: { kind: 'url', url: policy!.engine.baseUrl, protocol: 'vllm' },
                trainer: { device: 'cpu', backend: 'builtin', dtype: 'float32' },
              },
              reward: { name: 'math_answer' },
            }),
            dir,
          ),
          recipeDir: dir,
          logsDir: join(dir, run, 'logs'),
          runDir: join(dir, run),
          ...(loadsWeights === undefined ? {} : { loadsWeights }),
        });
      await expect(url('url-train')).rejects.toThrow(/cannot reload full weights/);
      const evalBase = await url('url-eval-base', false);
      expect(evalBase.facts).toMatchObject({ engine: 'url', weight_sync: 'full' });
      expect(
        (await evalBase.engine.generate([1, 2, 3], { maxTokens: 2, temperature: 0, topP: 1, topK: -1 })).tokenIds,
      ).toHaveLength(2);
      await evalBase.close();
      const trainerPid = Number(
        /atk_trainer pid (\d+)/.exec(readFileSync(join(runDir, 'logs', 'trainer.log'), 'utf8'))?.[1],
      );
      // The engine's processes name the model directory on their command line.
      const enginePids = processesRunning(modelDir);
      expect([alive(trainerPid), enginePids.length > 0]).toStrictEqual([true, true]);
      await policy.close();
      policy = undefined;
      expect([alive(trainerPid), processesRunning(modelDir)]).toStrictEqual([false, []]);
    },
    LAUNCHED_TEST_TIMEOUT_MS,
  );

  test(
    'returns a policy whose full fine-tuning step the engine serves after sync, reloaded through the worker extension',
    async () => {
      const runDir = join(dir, 'full');
      const full = await startPolicy({
        recipe: recipe(false),
        recipeDir: dir,
        logsDir: join(runDir, 'logs'),
        runDir,
      });
      try {
        expect(full.facts).toMatchObject({ engine: 'vllm', weight_sync: 'full' });
        expect(await trainOneStep(full)).toBe(1);
        const before = await servedGap(full, runDir);
        await full.sync.sync(1, join(runDir, 'checkpoints', 'step-00001'));
        expect(readdirSync(join(runDir, 'checkpoints', 'sync', 'step-00001')).sort()).toStrictEqual([
          'config.json',
          'model.safetensors',
        ]);
        expect(full.engine.model).toBe('policy'); // full weights keep the base name; the sync confirmed version policy@1
        expect([before > 1e-3, await servedGap(full, runDir)]).toStrictEqual([true, expect.closeTo(0, 5)]);
        // Resume: restoring a checkpoint puts its weights into the engine too, whatever it served before.
        const kept = join(runDir, 'checkpoints', 'step-00001');
        await full.trainer.save(kept);
        expect(await trainOneStep(full)).toBe(2);
        await full.sync.sync(2, join(runDir, 'checkpoints', 'step-00002'));
        expect(await full.trainer.load(kept)).toBe(1);
        expect(await servedGap(full, runDir)).toBeCloseTo(0, 5);
      } finally {
        await full.close();
      }
    },
    LAUNCHED_TEST_TIMEOUT_MS,
  );

  test.each([
    ['LoRA', true],
    ['full fine-tuning', false],
  ])('returns a policy whose %s step SGLang serves after sync', async (_name, lora) => {
    const runDir = join(dir, `sglang-${lora ? 'lora' : 'full'}`);
    const sglang = await startPolicy({
      recipe: recipe(lora, 'sglang'),
      recipeDir: dir,
      logsDir: join(runDir, 'logs'),
      runDir,
    });
    try {
      expect(sglang.facts).toMatchObject({
        engine: 'sglang',
        engine_version: '0.5.4',
        weight_sync: lora ? 'lora' : 'full',
      });
      expect(await trainOneStep(sglang)).toBe(1);
      const before = await servedGap(sglang, runDir);
      await sglang.sync.sync(1, join(runDir, 'checkpoints', 'step-00001'));
      expect(sglang.engine.model).toBe(lora ? 'policy@1' : 'policy');
      expect([before > 1e-3, await servedGap(sglang, runDir)]).toStrictEqual([true, expect.closeTo(0, 5)]);
    } finally {
      await sglang.close();
    }
  });

  test('rejects an engine older than atk supports once it reports its version, with both processes stopped', async () => {
    vi.stubEnv('ATK_DOUBLE_VERSION', '0.9.1');
    try {
      const old = resolveRecipe(
        RecipeSchema.parse({
          name: 'old-engine',
          model: {
            path: modelDir,
            engine: { kind: 'vllm', command: doubleEngineCommand, startup_timeout_s: 60 },
            trainer: { device: 'cpu', backend: 'builtin', dtype: 'float32' },
          },
          reward: { name: 'math_answer' },
          algorithm: { lora: { rank: 4, alpha: 8 } },
        }),
        dir,
      );
      const runDir = join(dir, 'old');
      const error = await startPolicy({
        recipe: old,
        recipeDir: dir,
        logsDir: join(runDir, 'logs'),
        runDir,
      }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ProviderError);
      expect([(error as ProviderError).message, (error as ProviderError).hint]).toStrictEqual([
        'vllm 0.9.1 is older than 0.10.2 (return_token_ids on /v1/completions and processed logprobs arrived in 0.10.2)',
        'upgrade the engine; atk doctor shows the supported range',
      ]);
      const logs = ['trainer.log', 'engine.log'].map((f) => readFileSync(join(runDir, 'logs', f), 'utf8')).join('\n');
      const pids = [...logs.matchAll(/(?:atk_trainer|engine-double:) pid (\d+)/g)].map((m) => Number(m[1]));
      expect([pids.length, pids.some(alive)]).toStrictEqual([2, false]);
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

describe('localModelDir', () => {
  test('returns a local directory as is and a downloaded hub id as its cached snapshot', () => {
    const cacheRoot = mkdtempSync(join(tmpdir(), 'atk-hub-'));
    const snapshot = join(cacheRoot, 'models--Qwen--Qwen2.5-1.5B-Instruct', 'snapshots', 'abc');
    mkdirSync(snapshot, { recursive: true });
    writeFileSync(join(snapshot, 'config.json'), '{}');
    expect([
      localModelDir(dir),
      localModelDir('Qwen/Qwen2.5-1.5B-Instruct', { HF_HUB_CACHE: cacheRoot }),
    ]).toStrictEqual([dir, snapshot]);
  });

  test('rejects a hub id that was never downloaded, saying how to download it', () => {
    const error = (() => {
      try {
        return localModelDir('Qwen/Qwen2.5-7B-Instruct', { HF_HUB_CACHE: '/nonexistent/hub' });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(InputError);
    expect([(error as InputError).message, (error as InputError).hint]).toStrictEqual([
      'model.path Qwen/Qwen2.5-7B-Instruct: not a local directory, and not in the Hugging Face cache (/nonexistent/hub)',
      'download it first: huggingface-cli download Qwen/Qwen2.5-7B-Instruct (or point model.path at a local Hugging Face directory)',
    ]);
  });
});

describe('engineProgressLines', () => {
  test('returns a line per phase change of each replica and one every interval while a phase lasts', () => {
    const lines: string[] = [];
    const report = engineProgressLines('vllm', (line) => lines.push(line), 15);
    const at = (replica: number, phase: 'spawned' | 'health' | 'models' | 'ready', elapsedS: number): void =>
      report({ replica, phase, elapsedS, timeoutS: 900 });
    at(0, 'spawned', 0);
    at(0, 'health', 0.01);
    for (let s = 1; s < 40; s++) at(0, 'health', s);
    at(1, 'health', 39.5);
    at(0, 'models', 40.2);
    at(0, 'ready', 40.6);
    expect(lines).toStrictEqual([
      'vllm replica 0: started after 0 s (limit 900 s)',
      'vllm replica 0: loading the model (waiting for GET /health) after 0 s (limit 900 s)',
      'vllm replica 0: loading the model (waiting for GET /health) after 16 s (limit 900 s)',
      'vllm replica 0: loading the model (waiting for GET /health) after 31 s (limit 900 s)',
      'vllm replica 1: loading the model (waiting for GET /health) after 40 s (limit 900 s)',
      'vllm replica 0: waiting for GET /v1/models after 40 s (limit 900 s)',
      'vllm replica 0: ready after 41 s (limit 900 s)',
    ]);
  });
});
