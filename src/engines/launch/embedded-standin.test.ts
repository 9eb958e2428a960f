import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { alive, embeddedVllmCommand } from '../../__fixtures__/engine-processes.js';
import { createVllmClient } from '../vllm.js';
import { launchStandinReplicas, tinyAdapterSync } from '../../__fixtures__/standin-replicas.js';
import { takenPort } from '../../__fixtures__/taken-port.js';
import { writeTinyModel } from '../../__fixtures__/tiny-qwen2.js';
import { EngineSchema } from '../../recipe/schema.js';
import { freePort } from '../../util/free-port.js';
import { EngineStartError, type EngineStartProgress } from './engine-process.js';
import { launchEngines, type LaunchedEngines } from './launch-engines.js';

// The bundled trainer's embedded engine (a real model, real sampling) launched as `vllm serve` through
// the launcher: the vLLM protocol, readiness, logs, LoRA sync and shutdown, with no vLLM installed.
const dir = mkdtempSync(join(tmpdir(), 'atk-standin-'));
const params = { maxTokens: 5, temperature: 1, topP: 1, topK: -1, seed: 3 };

describe('launchEngines with the embedded engine as vLLM', () => {
  let engines: LaunchedEngines;
  const progress: EngineStartProgress[] = [];
  beforeAll(async () => {
    engines = await launchStandinReplicas(dir, (p) => progress.push(p));
  });
  afterAll(() => engines?.stop());

  test('returns replicas that became ready only after their model loaded, each with its own log and GPU', () => {
    expect(
      progress
        .filter((p) => p.phase === 'ready')
        .map((p) => p.replica)
        .sort(),
    ).toStrictEqual([0, 1]);
    for (const replica of [0, 1]) {
      const log = readFileSync(join(dir, 'logs', `engine-${replica}.log`), 'utf8');
      expect(log).toContain(
        `"CUDA_VISIBLE_DEVICES": "${replica}", "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True", "VLLM_SERVER_DEV_MODE": "1"`,
      );
      expect(log).toContain("'--logprobs-mode', 'processed_logprobs'");
      expect(log).toContain('embedded-vllm-serve: model loaded, serving policy');
    }
  });

  test('returns generations from both replicas through the router', async () => {
    const samples = await Promise.all([1, 2, 3, 4].map((i) => engines.engine.generate([1, 2, i], params)));
    for (const g of samples) expect([g.tokenIds.length, g.logprobs.every((lp) => lp <= 0)]).toStrictEqual([5, true]);
    expect(engines.engine.inFlight()).toStrictEqual([0, 0]);
  });

  test('returns with both replicas serving policy@N after a LoRA sync, and new requests sampling from base + adapter', async () => {
    const sync = await tinyAdapterSync(engines, dir);
    await sync.sync(1, join(dir, 'checkpoints', 'step-00001'));
    await sync.sync(2, join(dir, 'checkpoints', 'step-00002'));
    for (const replica of engines.engine.replicas) expect(await replica.models()).toStrictEqual(['policy', 'policy@2']);
    expect(engines.engine.model).toBe('policy@2');
    const greedy = { maxTokens: 5, temperature: 0, topP: 1, topK: -1 };
    const tuned = await engines.engine.generate([1, 2], greedy);
    const base = await createVllmClient({ baseUrl: engines.processes[0].baseUrl, model: 'policy' }).generate(
      [1, 2],
      greedy,
    );
    expect(tuned.tokenIds).toHaveLength(5);
    expect(tuned.logprobs).not.toStrictEqual(base.logprobs); // the adapter changes what is sampled
  });

  test('returns from stop with every replica process gone', async () => {
    const pids = engines.processes.map((p) => p.pid);
    await engines.stop();
    expect(pids.map(alive)).toStrictEqual([false, false]);
  });
});

describe('launchEngines when a picked port is taken before the engine binds it', () => {
  /** One stand-in replica whose ports come from `pickPort`, its log in `dir/<name>`. */
  const launchOne = (name: string, pickPort: () => Promise<number>, command = embeddedVllmCommand) => {
    process.env.ATK_STANDIN_INIT = 'random';
    return launchEngines({
      kind: 'vllm',
      config: EngineSchema.parse({ kind: 'vllm', command, startup_timeout_s: 120 }),
      model: writeTinyModel(join(dir, `${name}-model`)),
      logsDir: join(dir, name),
      requestTimeoutMs: 30_000,
      pickPort,
    });
  };

  test('returns the replica started on another port', async () => {
    const { picked, pickPort, release } = await takenPort();
    const engines = await launchOne('taken', pickPort).finally(release);
    try {
      expect(picked).toHaveLength(2);
      expect(engines.processes[0]!.baseUrl).toBe(`http://127.0.0.1:${picked[1]}`);
      expect((await engines.engine.generate([1, 2, 3], params)).tokenIds).toHaveLength(5);
      expect(readFileSync(join(dir, 'taken', 'engine.log'), 'utf8')).toMatch(/Address already in use/);
    } finally {
      await engines.stop();
    }
  });

  test('throws at once when the engine fails for another reason, on the one port it picked', async () => {
    const picked: number[] = [];
    const error = await launchOne('broken', async () => {
      picked.push(await freePort());
      return picked.at(-1)!;
    }, ['/bin/sh', '-c', 'echo "no GPU found"; exit 3']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EngineStartError);
    expect((error as EngineStartError).message).toMatch(/vllm exited with code 3 during startup[\s\S]*no GPU found/);
    expect(picked).toHaveLength(1);
  });
});
