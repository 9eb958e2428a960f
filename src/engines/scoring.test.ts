import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { startEmbeddedEngine, type EmbeddedEngine } from '../__fixtures__/embedded-engine.js';
import { doubleLogprob, startEngineDouble, type EngineDouble } from '../__fixtures__/engine-double.js';
import { createSglangScorer, createVllmScorer } from './scoring.js';

describe('createVllmScorer against the embedded engine', () => {
  let embedded: EmbeddedEngine;
  beforeAll(async () => {
    embedded = await startEmbeddedEngine('pretrained');
  }, 60_000);
  afterAll(() => embedded.stop());

  test('returns the logprob the engine sampled each token with, null at the first position', async () => {
    const prompt = [352, 10, 20, 30];
    const sampled = await embedded.engine.generate(prompt, {
      maxTokens: 6,
      temperature: 1,
      topP: 1,
      topK: -1,
      seed: 4,
    });
    const scorer = createVllmScorer({ baseUrl: embedded.engine.baseUrl, model: 'policy' });
    const scores = await scorer.score([...prompt, ...sampled.tokenIds]);
    expect(scores).toHaveLength(prompt.length + sampled.tokenIds.length);
    expect(scores[0]).toBeNull();
    const generated = scores.slice(prompt.length) as number[];
    for (const [i, lp] of generated.entries()) expect(lp).toBeCloseTo(sampled.logprobs[i]!, 4);
    expect(scores.slice(1, prompt.length).every((lp) => typeof lp === 'number' && lp < 0)).toBe(true);
  });

  test('rejects a reply for a model the engine does not serve with a ProviderError', async () => {
    const scorer = createVllmScorer({ baseUrl: embedded.engine.baseUrl, model: 'other', retries: 0 });
    await expect(scorer.score([352, 10])).rejects.toThrow(/other/);
  });
});

describe('createSglangScorer', () => {
  let double: EngineDouble | undefined;
  afterEach(() => double?.close());

  test('sends return_logprob from position 0 and returns the input tokens scored in order', async () => {
    double = await startEngineDouble({ script: () => ({ tokenIds: [7] }) });
    const scores = await createSglangScorer({ baseUrl: double.url, model: 'policy' }).score([301, 117, 10]);
    expect(scores).toStrictEqual([null, doubleLogprob(117), doubleLogprob(10)]);
    expect(double.requests[0]!.body).toMatchObject({ return_logprob: true, logprob_start_len: 0 });
  });

  test('rejects a reply that scores other tokens than those sent', async () => {
    double = await startEngineDouble({
      script: () => ({ tokenIds: [7] }),
      routes: (_m, url) =>
        url === '/generate'
          ? { status: 200, body: { output_ids: [7], meta_info: { input_token_logprobs: [[null, 1, null]] } } }
          : undefined,
    });
    await expect(createSglangScorer({ baseUrl: double.url, model: 'policy' }).score([301, 117])).rejects.toThrow(
      /score other tokens/,
    );
  });
});
