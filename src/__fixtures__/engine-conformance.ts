// The protocol conformance suite every Engine must pass, whatever serves it: the vLLM/SGLang doubles
// here, and the bundled trainer's embedded engine (which speaks the vLLM subset) once it exists.
// Assertions hold for any real model: they check the protocol, not what the model says.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ProviderError } from '../errors/index.js';
import type { Engine, SamplingParams } from '../engines/types.js';

export interface ConformanceTarget {
  readonly engine: Engine;
  /** A valid prompt for the served model (e.g. a rendered chat prompt). */
  readonly promptIds: readonly number[];
  /** Stop tokens of the model. */
  readonly stopTokenIds: readonly number[];
  close(): Promise<void>;
}

const sampling: SamplingParams = { maxTokens: 24, temperature: 1, topP: 1, topK: -1 };

/** Registers the conformance tests for the engine `open` starts (once for the whole suite). */
export function describeEngineConformance(label: string, open: () => Promise<ConformanceTarget>): void {
  describe(`${label} conformance`, () => {
    let target: ConformanceTarget;
    beforeAll(async () => {
      target = await open();
    });
    afterAll(() => target?.close());

    test('returns healthy and lists the served model', async () => {
      expect(await target.engine.health()).toBe(true);
      expect(await target.engine.models()).toContain(target.engine.model);
    });

    test('returns one finite logprob <= 0 per generated token', async () => {
      const g = await target.engine.generate(target.promptIds, { ...sampling, seed: 1 });
      expect(g.tokenIds.length).toBeGreaterThan(0);
      expect(g.logprobs.length).toBe(g.tokenIds.length);
      for (const lp of g.logprobs) expect(Number.isFinite(lp) && lp <= 0).toBe(true);
      expect(g.tokenIds.every((id) => Number.isInteger(id) && id >= 0)).toBe(true);
    });

    test('returns at most maxTokens tokens, and length exactly when cut there', async () => {
      const g = await target.engine.generate(target.promptIds, { ...sampling, maxTokens: 3, seed: 2 });
      expect(g.tokenIds.length).toBeLessThanOrEqual(3);
      if (g.finishReason === 'length') expect(g.tokenIds.length).toBe(3);
    });

    test('returns a stop token only as the last token, with finish reason stop', async () => {
      const g = await target.engine.generate(target.promptIds, {
        ...sampling,
        maxTokens: 64,
        seed: 3,
        stopTokenIds: target.stopTokenIds,
      });
      const at = g.tokenIds.findIndex((id) => target.stopTokenIds.includes(id));
      if (at >= 0) expect([at, g.finishReason]).toStrictEqual([g.tokenIds.length - 1, 'stop']);
      else expect(g.finishReason).not.toBe('stop');
    });

    test('returns the same tokens for the same seed', async () => {
      const params = { ...sampling, seed: 1234 };
      const [a, b] = [
        await target.engine.generate(target.promptIds, params),
        await target.engine.generate(target.promptIds, params),
      ];
      expect(b.tokenIds).toStrictEqual(a.tokenIds);
    });

    test('returns n samples from generateN', async () => {
      const samples = await target.engine.generateN(target.promptIds, { ...sampling, n: 2, seed: 5 });
      expect(samples).toHaveLength(2);
      for (const s of samples) expect(s.logprobs.length).toBe(s.tokenIds.length);
    });

    test('rejects an unknown model with the server message', async () => {
      const name = target.engine.model;
      target.engine.setModel('atk-no-such-model');
      try {
        const failure = await target.engine.generate(target.promptIds, sampling).catch((e: unknown) => e);
        expect(failure).toBeInstanceOf(ProviderError);
        expect((failure as Error).message).toMatch(/atk-no-such-model/);
      } finally {
        target.engine.setModel(name);
      }
    });

    test('rejects with the caller reason when the signal is aborted', async () => {
      const reason = new Error('stop now');
      await expect(target.engine.generate(target.promptIds, sampling, AbortSignal.abort(reason))).rejects.toBe(reason);
    });
  });
}
