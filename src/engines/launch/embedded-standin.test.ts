import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { alive } from '../../__fixtures__/engine-processes.js';
import { createVllmClient } from '../vllm.js';
import { launchStandinReplicas, tinyAdapterSync } from '../../__fixtures__/standin-replicas.js';
import type { EngineStartProgress } from './engine-process.js';
import type { LaunchedEngines } from './launch-engines.js';

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
