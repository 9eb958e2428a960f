import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TINY_ARITH_DIR } from '../__fixtures__/embedded-engine.js';
import { ProviderError } from '../errors/index.js';
import { launchTrainer, type TrainerProcess } from '../trainer/index.js';
import {
  createSyncProbe,
  PROBE_LENGTH,
  PROBE_TOLERANCES,
  probeSequence,
  probeShape,
  probeTolerance,
  type SyncProbeOptions,
  trainerPrecision,
} from './sync-probe.js';

describe('probeSequence', () => {
  test('returns the same ids in the vocabulary every time, shorter where the context leaves no room', () => {
    const ids = probeSequence(359, 4096);
    expect(ids).toStrictEqual(probeSequence(359, 4096));
    expect([ids.length, ids.every((t) => Number.isInteger(t) && t >= 0 && t < 359)]).toStrictEqual([
      PROBE_LENGTH,
      true,
    ]);
    expect(new Set(ids).size).toBeGreaterThan(100);
    expect(probeSequence(359, 64)).toStrictEqual(ids.slice(0, 63));
    expect(probeShape(TINY_ARITH_DIR)).toStrictEqual({ vocabSize: 359, maxPositions: 512 });
  });
});

describe('probeTolerance', () => {
  test('returns the float32 tolerance only when both sides compute in float32, and a recipe setting over either', () => {
    expect(
      [
        probeTolerance(undefined, 'float32', 'float32'),
        probeTolerance(undefined, 'float32', 'half'),
        probeTolerance(undefined, 'half', 'float32'),
        probeTolerance(0.05, 'half', 'half'),
      ].map((t) => t.tolerance),
    ).toStrictEqual([PROBE_TOLERANCES.float32, PROBE_TOLERANCES.half, PROBE_TOLERANCES.half, 0.05]);
    expect([
      trainerPrecision('auto', 'cpu'),
      trainerPrecision('auto', 'cuda:0'),
      trainerPrecision('float32', 'cuda:0'),
      trainerPrecision('bfloat16', 'cpu'),
    ]).toStrictEqual(['float32', 'half', 'float32', 'half']);
  });
});

// Two trainers on tiny-arith: `trained` takes a step, `stale` keeps the weights it loaded, as an engine whose
// sync did not take would. Each serves the embedded engine from its own weights.
describe('createSyncProbe', () => {
  const dir = mkdtempSync(join(tmpdir(), 'atk-sync-probe-'));
  let trained: TrainerProcess;
  let stale: TrainerProcess;
  const tokens = probeSequence(359, 4096);

  beforeAll(async () => {
    [trained, stale] = await Promise.all(
      ['trained', 'stale'].map((name) =>
        launchTrainer({ logFile: join(dir, `${name}.log`), threads: 1, startupTimeoutMs: 60_000 }),
      ),
    );
    const load = { path: TINY_ARITH_DIR, backend: 'builtin', device: 'cpu', dtype: 'float32' } as const;
    await Promise.all([trained, stale].map((t) => t.client.loadModel({ ...load, train: { learning_rate: 2e-4 } })));
  }, 120_000);
  afterAll(async () => {
    await Promise.all([trained?.stop(), stale?.stop()]);
    rmSync(dir, { recursive: true, force: true });
  });

  const probe = (replicas: readonly string[], extra: Partial<SyncProbeOptions> = {}) =>
    createSyncProbe({
      engine: 'vllm',
      protocol: 'vllm',
      replicas,
      baseModel: 'policy',
      trainer: trained.client,
      tokens,
      tolerance: PROBE_TOLERANCES.float32,
      toleranceReason: 'float32 on both sides',
      timeoutMs: 60_000,
      ...extra,
    });

  test('returns a gap near 0 for engines serving the trainer its own weights, and one over the tolerance after a step only one took', async () => {
    expect(await probe([trained.engineUrl, stale.engineUrl]).verify(0, 'policy')).toBeLessThan(1e-5);
    // One SFT step on the probe's own continuation: it moves every logprob of the model a little.
    const ids = tokens.slice(0, 40);
    await trained.client.trainStep({
      loss: 'sft',
      sequences: [{ token_ids: ids, loss_mask: ids.map((_, i) => (i < 20 ? 0 : 1)) }],
    });
    expect(await probe([trained.engineUrl]).verify(1, 'policy')).toBeLessThan(1e-5);
    const error = await probe([trained.engineUrl, stale.engineUrl])
      .verify(1, 'policy')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as Error).message).toMatch(
      /^weight sync check failed: the vllm engine replica 1 does not serve policy 1: its logprobs of a 160-token probe are up to (\d\.\d{4}|\d\.\d\de-\d) away from the trainer's \(tolerance 0\.001, float32 on both sides\); widest at /,
    );
    const gap = Number(/up to (\S+) away/.exec((error as Error).message)![1]);
    expect(gap).toBeGreaterThan(PROBE_TOLERANCES.float32);
    // Within a tolerance above the gap the same engines pass, and the figure is that gap.
    expect(await probe([stale.engineUrl], { tolerance: 100 }).verify(1, 'policy')).toBeCloseTo(gap, 4);
  }, 120_000);

  test('rejects a check for another policy version than the trainer holds', async () => {
    await expect(probe([trained.engineUrl]).verify(7, 'policy')).rejects.toThrow(
      'weight sync check: the trainer holds policy 1, the engine was synced to 7',
    );
  }, 60_000);
});
