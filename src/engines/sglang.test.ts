import { afterEach, describe, expect, test } from 'vitest';
import { describeEngineConformance } from '../__fixtures__/engine-conformance.js';
import {
  outOfOrderTopTokens,
  seededScript,
  startEngineDouble,
  type EngineDouble,
} from '../__fixtures__/engine-double.js';
import { createSglangClient } from './sglang.js';

describeEngineConformance('sglang client against the SGLang double', async () => {
  const double = await startEngineDouble({ script: seededScript(256, 302) });
  return {
    engine: createSglangClient({ baseUrl: double.url, model: 'policy' }),
    promptIds: [301, 117, 10],
    stopTokenIds: [302],
    close: () => double.close(),
  };
});

describe('createSglangClient', () => {
  let double: EngineDouble | undefined;
  afterEach(() => double?.close());

  test('returns the k most likely tokens of each position, most likely first, when asked for top logprobs', async () => {
    double = await startEngineDouble({
      script: () => outOfOrderTopTokens,
    });
    const g = await createSglangClient({ baseUrl: double.url, model: 'policy' }).generate([1], {
      maxTokens: 8,
      temperature: 1,
      topP: 1,
      topK: -1,
      topLogprobs: 2,
    });
    expect(double.requests[0].body.top_logprobs_num).toBe(2);
    expect(g.topLogprobs).toStrictEqual([
      [
        { id: 9, logprob: -0.1 },
        { id: 7, logprob: -0.3 },
      ],
      [
        { id: 302, logprob: -0.25 },
        { id: 4, logprob: -3 },
      ],
    ]);
  });

  test('returns the engine tokens and logprobs of a native /generate request', async () => {
    double = await startEngineDouble({
      script: () => ({ tokenIds: [5, 6, 302, 7], logprobs: [-0.5, -0.25, -0.125, -1] }),
    });
    const engine = createSglangClient({ baseUrl: double.url, model: 'policy' });
    const g = await engine.generate([1, 2], {
      maxTokens: 8,
      temperature: 1,
      topP: 1,
      topK: -1,
      seed: 3,
      stopTokenIds: [302],
    });
    expect(g).toStrictEqual({ tokenIds: [5, 6, 302], logprobs: [-0.5, -0.25, -0.125], finishReason: 'stop' });
    expect(double.requests[0].body).toStrictEqual({
      input_ids: [1, 2],
      sampling_params: {
        max_new_tokens: 8,
        temperature: 1,
        top_p: 1,
        top_k: -1,
        n: 1,
        sampling_seed: 3,
        stop_token_ids: [302],
        skip_special_tokens: false,
        spaces_between_special_tokens: false,
        no_stop_trim: true,
      },
      return_logprob: true,
      logprob_start_len: -1,
      top_logprobs_num: 0,
      stream: false,
    });
  });

  test('returns requests routed to a LoRA adapter after setModel', async () => {
    double = await startEngineDouble({ script: () => ({ tokenIds: [1] }), models: ['policy', 'policy@3'] });
    const engine = createSglangClient({ baseUrl: double.url, model: 'policy' });
    engine.setModel('policy@3');
    await engine.generate([1], { maxTokens: 2, temperature: 1, topP: 1, topK: -1 });
    expect([engine.model, double.requests[0].body.lora_path]).toStrictEqual(['policy@3', 'policy@3']);
  });
});
