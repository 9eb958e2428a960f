import { afterEach, describe, expect, test } from 'vitest';
import { ProviderError } from '../errors/index.js';
import { describeEngineConformance } from '../__fixtures__/engine-conformance.js';
import {
  outOfOrderTopTokens,
  seededScript,
  startEngineDouble,
  type EngineDouble,
  type ReplyScript,
} from '../__fixtures__/engine-double.js';
import { createVllmClient } from './vllm.js';

describeEngineConformance('vllm client against the vLLM double', async () => {
  const double = await startEngineDouble({ script: seededScript(256, 302) });
  return {
    engine: createVllmClient({ baseUrl: double.url, model: 'policy' }),
    promptIds: [301, 117, 10],
    stopTokenIds: [302],
    close: () => double.close(),
  };
});

describe('createVllmClient', () => {
  let double: EngineDouble | undefined;
  afterEach(() => double?.close());
  const start = async (script: ReplyScript): Promise<EngineDouble> => (double = await startEngineDouble({ script }));
  const params = { maxTokens: 5, temperature: 0.7, topP: 0.9, topK: 20 };

  test('returns the engine tokens and logprobs of a token-id completion request', async () => {
    const d = await start(() => ({ tokenIds: [7, 8, 302, 9], logprobs: [-0.5, -0.25, -0.125, -1] }));
    const engine = createVllmClient({ baseUrl: d.url, model: 'policy' });
    const g = await engine.generate([1, 2, 3], { ...params, seed: 11, stopTokenIds: [302] });
    expect(g).toStrictEqual({ tokenIds: [7, 8, 302], logprobs: [-0.5, -0.25, -0.125], finishReason: 'stop' });
    expect(d.requests[0].body).toStrictEqual({
      model: 'policy',
      prompt: [1, 2, 3],
      max_tokens: 5,
      temperature: 0.7,
      top_p: 0.9,
      top_k: 20,
      n: 1,
      seed: 11,
      stop_token_ids: [302],
      logprobs: 0,
      return_token_ids: true,
      return_tokens_as_token_ids: true,
      skip_special_tokens: false,
      spaces_between_special_tokens: false,
      include_stop_str_in_output: true,
      stream: false,
    });
  });

  test('returns the k most likely tokens of each position, most likely first, when asked for top logprobs', async () => {
    const d = await start(() => outOfOrderTopTokens);
    const g = await createVllmClient({ baseUrl: d.url, model: 'policy' }).generate([1], { ...params, topLogprobs: 2 });
    expect(d.requests[0].body.logprobs).toBe(2);
    expect(g.logprobs).toStrictEqual([-0.5, -0.25]);
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

  test('returns length when max_tokens cuts the output', async () => {
    const d = await start(() => ({ tokenIds: [1, 2, 3, 4, 5, 6, 7] }));
    const g = await createVllmClient({ baseUrl: d.url, model: 'policy' }).generate([1], params);
    expect([g.tokenIds, g.finishReason]).toStrictEqual([[1, 2, 3, 4, 5], 'length']);
  });

  test('returns the requests of later episodes over the kept-alive connections earlier ones opened', async () => {
    const d = await start(() => ({ tokenIds: [7, 302] }));
    const episode = (): ReturnType<typeof createVllmClient> => createVllmClient({ baseUrl: d.url, model: 'policy' });
    // The pool may open a second socket while the first is being released; after that it only reuses.
    for (let turn = 0; turn < 3; turn++) await episode().generate([1, 2], params);
    const opened = d.connections();
    for (let turn = 0; turn < 20; turn++) await episode().generate([1, 2], params);
    expect([d.requests.length, d.connections()]).toStrictEqual([23, opened]);
    expect(opened).toBeLessThanOrEqual(2);
  });

  test('returns after retrying dropped connections', async () => {
    const d = await start(() => ({ tokenIds: [4] }));
    d.dropNext(2);
    const g = await createVllmClient({ baseUrl: d.url, model: 'policy', retries: 2, backoffMs: 5 }).generate(
      [1],
      params,
    );
    expect(g.tokenIds).toStrictEqual([4]);
    expect(d.requests).toHaveLength(1);
  });

  test('rejects with ProviderError when connections keep failing past the retries', async () => {
    const d = await start(() => ({ tokenIds: [4] }));
    d.dropNext(5);
    const engine = createVllmClient({ baseUrl: d.url, model: 'policy', retries: 1, backoffMs: 5 });
    await expect(engine.generate([1], params)).rejects.toThrow(/unreachable/);
  });

  test('rejects a 400 with the server message and does not retry it', async () => {
    const message = "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.";
    const d = await start(() => ({
      status: 400,
      body: { object: 'error', message, type: 'BadRequestError', param: null, code: 400 },
    }));
    const failure = await createVllmClient({ baseUrl: d.url, model: 'policy' })
      .generate([1], params)
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ProviderError);
    expect((failure as Error).message).toBe(`vllm POST /v1/completions answered 400: ${message}`);
    expect(d.requests).toHaveLength(1);
  });

  test('rejects a request that outlives the timeout', async () => {
    const d = await start(() => 'hang');
    await expect(
      createVllmClient({ baseUrl: d.url, model: 'policy', timeoutMs: 150 }).generate([1], params),
    ).rejects.toThrow(/timed out after 150 ms/);
  });

  test('rejects an in-flight request with the caller reason when aborted', async () => {
    const d = await start(() => 'hang');
    const controller = new AbortController();
    const pending = createVllmClient({ baseUrl: d.url, model: 'policy' }).generate([1], params, controller.signal);
    setTimeout(() => controller.abort(new Error('cancelled by test')), 50);
    await expect(pending).rejects.toThrow('cancelled by test');
  });

  test('rejects a reply whose logprobs do not cover every token', async () => {
    const d = await start(() => ({ tokenIds: [1, 2, 3], logprobs: [-1] }));
    await expect(createVllmClient({ baseUrl: d.url, model: 'policy' }).generate([1], params)).rejects.toThrow(
      /3 tokens but 1 logprobs/,
    );
  });

  test.each([
    ['a token id that is not a number', { token_ids: [1, '2'] }, /token_ids holds a value that is not a token id/],
    [
      'an echoed prompt that is not an array',
      { prompt_token_ids: '1' },
      /choices.0.prompt_token_ids: expected an array of token ids/,
    ],
    ['an echoed prompt that differs from the one sent', { prompt_token_ids: ['1'] }, /prompt_token_ids differ/],
    [
      'a logprob that is not a number',
      { logprobs: { token_logprobs: [-1, '-2'] } },
      /token_logprobs holds a non-number/,
    ],
    [
      'a top logprob that is not a number',
      { logprobs: { token_logprobs: [-1, -2], top_logprobs: [{ 'token_id:1': -1 }, { 'token_id:2': 'x' }] } },
      /top logprob 'token_id:2' at 1 is not a number/,
    ],
  ])('rejects a reply with %s', async (_, change, message) => {
    const choice = {
      index: 0,
      finish_reason: 'stop',
      token_ids: [1, 2],
      prompt_token_ids: [1],
      logprobs: { token_logprobs: [-1, -2], top_logprobs: [{ 'token_id:1': -1 }, { 'token_id:2': -2 }] },
      ...change,
    };
    double = await startEngineDouble({
      script: () => ({ tokenIds: [] }),
      routes: (_method, url) => (url === '/v1/completions' ? { status: 200, body: { choices: [choice] } } : undefined),
    });
    const engine = createVllmClient({ baseUrl: double.url, model: 'policy' });
    await expect(engine.generate([1], { ...params, topLogprobs: 1 })).rejects.toThrow(message);
  });

  test('returns unhealthy when nothing listens', async () => {
    const d = await start(() => ({ tokenIds: [] }));
    const url = d.url;
    await d.close();
    double = undefined;
    const engine = createVllmClient({ baseUrl: url, model: 'policy', retries: 0 });
    expect(await engine.health()).toBe(false);
    await expect(engine.generate([1], params)).rejects.toThrow(/unreachable \(ECONNREFUSED\)/);
  });
});
