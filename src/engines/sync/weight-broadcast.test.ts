import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { launchStandinReplicas } from '../../__fixtures__/standin-replicas.js';
import { launchTrainer, type TrainerProcess } from '../../trainer/index.js';
import type { LaunchedEngines } from '../launch/index.js';
import { createVllmClient } from '../vllm.js';
import { createEngineSync } from './engine-sync.js';
import { createWeightBroadcast, type WeightSender } from './weight-broadcast.js';

// The real trainer process broadcasts its full weights over a gloo group into two stand-in replicas
// launched as `vllm serve` with atk's worker extension (the code vLLM's workers would run; NCCL, the
// CUDA path, is not exercised here). No file is written: the sync directory must stay absent.
const dir = mkdtempSync(join(tmpdir(), 'atk-broadcast-'));
const greedy = { maxTokens: 4, temperature: 0, topP: 1, topK: -1 };

describe('createEngineSync with a weight broadcast', () => {
  let trainer: TrainerProcess;
  let engines: LaunchedEngines;
  beforeAll(async () => {
    [engines, trainer] = await Promise.all([
      launchStandinReplicas(dir, undefined, true),
      launchTrainer({ logFile: join(dir, 'logs', 'trainer.log'), threads: 1, startupTimeoutMs: 120_000 }),
    ]);
    await trainer.client.loadModel({
      path: join(dir, 'tiny'),
      init: 'random',
      backend: 'builtin',
      device: 'cpu',
      dtype: 'float32',
      train: { seed: 7 },
    });
  }, 180_000);
  afterAll(async () => {
    await Promise.all([engines?.stop(), trainer?.stop()]);
  });

  /** Greedy logprobs of one prompt from each replica, and from the trainer's own engine (its weights). */
  async function logprobs(): Promise<{ replicas: number[][]; trainer: number[] }> {
    const ask = (baseUrl: string): Promise<number[]> =>
      createVllmClient({ baseUrl, model: 'policy' })
        .generate([1, 2, 3], greedy)
        .then((g) => [...g.tokenIds, ...g.logprobs]);
    return {
      replicas: await Promise.all(engines.processes.map((p) => ask(p.baseUrl))),
      trainer: await ask(trainer.engineUrl),
    };
  }

  test('returns with every replica serving the trainer weights, bit for bit, and what it moved', async () => {
    const before = await logprobs();
    expect(before.replicas[0]).not.toStrictEqual(before.trainer); // other random weights to begin with
    const sync = createEngineSync({
      mode: 'full',
      protocol: 'vllm',
      engine: engines.engine,
      replicaUrls: engines.processes.map((p) => p.baseUrl),
      writePolicy: () => Promise.reject(new Error('a broadcast writes no files')),
      broadcast: { sender: trainer.client.weights, masterAddr: '127.0.0.1', dtype: 'float32', timeoutS: 60 },
    });
    await sync.check();
    await sync.sync(1, join(dir, 'checkpoints', 'step-00001'));
    const after = await logprobs();
    // Same weights in the same dtype and the same code: identical tokens and logprobs.
    expect(after.replicas).toStrictEqual([after.trainer, after.trainer]);
    // The tiny qwen2 (hidden 16, kv 8, mlp 32, vocab 32): q, k, v (+ biases), o, gate, up, down and 2 norms per
    // layer, 2 layers, the embedding and the final norm; the tied head is not sent. float32: 4 bytes each.
    const perLayer = 16 * 16 + 16 + 2 * (8 * 16 + 8) + 16 * 16 + 3 * (32 * 16) + 2 * 16;
    const params = 32 * 16 + 2 * perLayer + 16;
    expect(sync.lastTransfer).toStrictEqual({ bytes: params * 4, tensors: 2 + 2 * 12 });
    expect(sync.served).toBe('policy@1');
    expect(existsSync(join(dir, 'checkpoints'))).toBe(false); // nothing went through the disk
  });
});

describe('createWeightBroadcast', () => {
  test('rejects engine workers on another torch than the trainer before anyone joins, and lets another build of the same one join', async () => {
    const joined: string[] = [];
    const sender: WeightSender = {
      open: async () => ({ port: 1, backend: 'gloo', tensors: [], bytes: 0, torch: '1.13.1' }),
      join: async () => void joined.push('trainer'),
      send: async () => ({ tensors: 0, bytes: 0 }),
    };
    const broadcast = (torch: string) =>
      createWeightBroadcast({
        sender,
        replicas: [
          {
            url: 'http://engine:8000',
            receiver: {
              workerTorch: async () => [torch],
              join: async () => void joined.push('worker'),
              receive: async () => undefined,
            },
          },
        ],
        masterAddr: '127.0.0.1',
        timeoutS: 5,
      });
    await expect(broadcast('2.13.0+cu130').reload('policy@1')).rejects.toThrow(
      'weight broadcast: vllm replica 0 at http://engine:8000 runs torch 2.13.0+cu130, the trainer torch 1.13.1: their torch.distributed groups cannot connect',
    );
    expect(joined).toStrictEqual([]);
    expect(await broadcast('1.13.1+cpu').reload('policy@1')).toStrictEqual({ bytes: 0, tensors: 0 });
    expect(joined).toStrictEqual(['trainer', 'worker']);
  });
});
