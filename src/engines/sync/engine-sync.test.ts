import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { doubleEngineCommand } from '../../__fixtures__/engine-processes.js';
import { ProviderError } from '../../errors/index.js';
import { EngineSchema } from '../../recipe/schema.js';
import { launchEngines, type LaunchedEngines } from '../launch/launch-engines.js';
import type { Engine } from '../types.js';
import { createEngineSync } from './engine-sync.js';
import { trackRequests } from './in-flight.js';

// Launched engine doubles (the vLLM/SGLang protocol stand-ins, started as processes through the real
// launcher) and a writePolicy that writes what the trainer's save writes: a peft adapter or HF weights.
const dir = mkdtempSync(join(tmpdir(), 'atk-sync-'));
const checkpoints = join(dir, 'checkpoints');
const params = { maxTokens: 3, temperature: 1, topP: 1, topK: -1, seed: 1 };

function writeAdapter(target: string): Promise<void> {
  mkdirSync(target, { recursive: true });
  writeFileSync(join(target, 'adapter_config.json'), JSON.stringify({ peft_type: 'LORA', r: 8 }));
  writeFileSync(join(target, 'adapter_model.safetensors'), 'weights');
  return Promise.resolve();
}

function writeWeights(target: string): Promise<void> {
  mkdirSync(target, { recursive: true });
  writeFileSync(join(target, 'config.json'), JSON.stringify({ model_type: 'qwen2' }));
  writeFileSync(join(target, 'model.safetensors'), 'weights');
  return Promise.resolve();
}

async function launch(
  kind: 'vllm' | 'sglang',
  replicas: number,
  lora: boolean,
  logs: string,
): Promise<LaunchedEngines> {
  const config = EngineSchema.parse({
    kind,
    command: doubleEngineCommand,
    replicas,
    gpus: replicas === 2 ? [0, 1] : [],
    startup_timeout_s: 60,
  });
  return launchEngines({
    kind,
    config,
    model: 'models/tiny',
    logsDir: join(dir, logs),
    requestTimeoutMs: 10_000,
    ...(lora ? { lora: { rank: 8, targetModules: ['q_proj'] } } : {}),
  });
}

/** An engine sync into every replica of `engines`, writing each policy with `writePolicy`. */
function syncInto(
  engines: LaunchedEngines,
  protocol: 'vllm' | 'sglang',
  mode: 'lora' | 'full',
  writePolicy: (target: string) => Promise<void>,
): ReturnType<typeof createEngineSync> {
  return createEngineSync({
    mode,
    protocol,
    engine: engines.engine,
    replicaUrls: engines.processes.map((p) => p.baseUrl),
    writePolicy,
  });
}

async function calls(baseUrl: string): Promise<string[]> {
  const reply = (await (await fetch(`${baseUrl}/_double/calls`)).json()) as {
    path: string;
    body: { lora_name?: string };
  }[];
  return reply.map((c) => `${c.path} ${c.body.lora_name ?? ''}`.trim());
}

describe('createEngineSync', () => {
  let vllm: LaunchedEngines;
  let sglang: LaunchedEngines;
  beforeAll(async () => {
    [vllm, sglang] = await Promise.all([launch('vllm', 2, true, 'vllm'), launch('sglang', 1, true, 'sglang')]);
  });
  afterAll(() => Promise.all([vllm?.stop(), sglang?.stop()]));

  test('returns with every vLLM replica serving the new adapter and the old one unloaded', async () => {
    const engine = vllm.engine;
    const sync = createEngineSync({
      mode: 'lora',
      protocol: 'vllm',
      engine,
      replicaUrls: vllm.processes.map((p) => p.baseUrl),
      writePolicy: writeAdapter,
    });
    expect(readFileSync(join(dir, 'vllm', 'engine-1.log'), 'utf8')).toContain(
      'CUDA_VISIBLE_DEVICES=1 VLLM_ALLOW_RUNTIME_LORA_UPDATING=True',
    );
    expect([vllm.version, sglang.version]).toStrictEqual(['0.11.0', '0.5.4']);
    await sync.sync(1, join(checkpoints, 'step-00001'));
    await sync.sync(2, join(checkpoints, 'step-00002'));
    expect([sync.served, engine.model, sync.lastSeconds > 0]).toStrictEqual(['policy@2', 'policy@2', true]);
    for (const replica of engine.replicas) expect(await replica.models()).toStrictEqual(['policy', 'policy@2']);
    for (const p of vllm.processes) {
      expect(await calls(p.baseUrl)).toStrictEqual([
        '/v1/load_lora_adapter policy@1',
        '/reset_prefix_cache',
        '/v1/load_lora_adapter policy@2',
        '/v1/unload_lora_adapter policy@1',
        '/reset_prefix_cache',
      ]);
    }
    expect([
      existsSync(join(checkpoints, 'sync', 'step-00001')),
      existsSync(join(checkpoints, 'sync', 'step-00002', 'adapter_config.json')),
    ]).toStrictEqual([false, true]);
    const samples = await Promise.all([1, 2, 3, 4].map((i) => engine.generate([i], params)));
    expect(samples.every((g) => g.tokenIds.length === 3)).toBe(true);
  });

  test('returns from a LoRA sync while a request runs on the old adapter, which is unloaded once that request finishes', async () => {
    const base = vllm.engine;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    // The router, with each request held until released: a long episode turn still running during the sync.
    const slow: Engine = {
      kind: base.kind,
      baseUrl: base.baseUrl,
      get model() {
        return base.model;
      },
      generate: async (ids, p, signal) => {
        await held;
        return base.generate(ids, p, signal);
      },
      generateN: (ids, p, signal) => base.generateN(ids, p, signal),
      health: () => base.health(),
      models: () => base.models(),
      setModel: (name) => base.setModel(name),
    };
    const engine = trackRequests(slow);
    const urls = vllm.processes.map((p) => p.baseUrl);
    const sync = createEngineSync({
      mode: 'lora',
      protocol: 'vllm',
      engine,
      requests: engine,
      replicaUrls: urls,
      writePolicy: writeAdapter,
    });
    await sync.sync(11, join(dir, 'inflight', 'step-00011'));
    const before = (await calls(urls[0]!)).length;
    const running = engine.generate([1], params);
    await sync.sync(12, join(dir, 'inflight', 'step-00012'));
    expect([engine.model, (await calls(urls[0]!)).slice(before)]).toStrictEqual([
      'policy@12',
      ['/v1/load_lora_adapter policy@12', '/reset_prefix_cache'],
    ]);
    release();
    expect((await running).tokenIds).toHaveLength(3);
    await engine.drained('policy@11');
    for (
      let waited = 0;
      waited < 5_000 && !(await calls(urls[0]!)).includes('/v1/unload_lora_adapter policy@11');
      waited += 50
    )
      await sleep(50);
    expect((await calls(urls[0]!)).slice(before)).toStrictEqual([
      '/v1/load_lora_adapter policy@12',
      '/reset_prefix_cache',
      '/v1/unload_lora_adapter policy@11',
    ]);
    base.setModel('policy');
  });

  test('returns a paused engine that sends no new request until released, while one already sent finishes', async () => {
    const engine = trackRequests(vllm.engine);
    const resume = engine.pause();
    let sent = false;
    const waiting = engine.generate([2], params).then((g) => {
      sent = true;
      return g;
    });
    await sleep(100);
    expect(sent).toBe(false);
    resume();
    expect((await waiting).tokenIds).toHaveLength(3);
  });

  test('returns at once for version 0, the base model the engine started with', async () => {
    const sync = createEngineSync({
      mode: 'lora',
      protocol: 'vllm',
      engine: vllm.engine,
      replicaUrls: [],
      writePolicy: () => Promise.reject(new Error('written twice')),
    });
    await expect(sync.sync(0, join(checkpoints, 'step-00000'))).resolves.toBeUndefined();
  });

  test('rejects a LoRA sync into an engine started without runtime LoRA, keeping the base model', async () => {
    const plain = await launch('vllm', 1, false, 'plain');
    try {
      const sync = syncInto(plain, 'vllm', 'lora', writeAdapter);
      const error = await sync.sync(1, join(dir, 'plain-ckpt', 'step-00001')).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ProviderError);
      expect((error as Error).message).toBe('vllm POST /v1/load_lora_adapter answered 404: Not Found');
      expect([plain.engine.model, sync.served]).toStrictEqual(['policy', 'policy']);
    } finally {
      await plain.stop();
    }
  });

  test('returns with SGLang serving the adapter through lora_path', async () => {
    const sync = syncInto(sglang, 'sglang', 'lora', writeAdapter);
    await sync.sync(1, join(dir, 'sglang-ckpt', 'step-00001'));
    await sync.sync(2, join(dir, 'sglang-ckpt', 'step-00002'));
    expect(sglang.engine.model).toBe('policy@2');
    expect(await calls(sglang.processes[0].baseUrl)).toStrictEqual([
      '/load_lora_adapter policy@1',
      '/flush_cache',
      '/load_lora_adapter policy@2',
      '/unload_lora_adapter policy@1',
      '/flush_cache',
    ]);
    expect((await sglang.engine.generate([1, 2], params)).tokenIds).toHaveLength(3);
    sglang.engine.setModel('policy');
  });

  test('returns with SGLang reloaded from disk under the new weight version', async () => {
    const sync = syncInto(sglang, 'sglang', 'full', writeWeights);
    await sync.sync(3, join(dir, 'full-ckpt', 'step-00003'));
    const info = (await (await fetch(`${sglang.processes[0].baseUrl}/get_model_info`)).json()) as {
      weight_version: string;
      model_path: string;
    };
    expect([info.weight_version, info.model_path, sglang.engine.model]).toStrictEqual([
      'policy@3',
      join(dir, 'full-ckpt', 'sync', 'step-00003'),
      'policy',
    ]);
    // The files the trainer wrote, once whatever the replicas; no tensor count off a broadcast.
    const written = ['config.json', 'model.safetensors'].map((f) => statSync(join(info.model_path, f)).size);
    expect(sync.lastTransfer).toStrictEqual({ bytes: written[0]! + written[1]! });
  });

  test('rejects a full reload SGLang refuses, with its message', async () => {
    const sync = syncInto(sglang, 'sglang', 'full', writeAdapter);
    const error = await sync.sync(4, join(dir, 'bad-ckpt', 'step-00004')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as Error).message).toBe(
      `sglang POST /update_weights_from_disk answered 400: Failed to update weights: no config.json in ${join(dir, 'bad-ckpt', 'sync', 'step-00004')}`,
    );
  });
});
