import { afterEach, describe, expect, it } from 'vitest';
import { seededScript, startEngineDouble, type EngineDouble } from '../__fixtures__/engine-double.js';
import { sendProtocolRequest } from './protocol-request.js';
import { createSglangClient } from './sglang.js';
import type { Engine, EngineClientOptions, Generation, ProtocolRequest } from './types.js';
import { createVllmClient } from './vllm.js';

const params = { maxTokens: 8, temperature: 1, topP: 1, topK: -1, seed: 5, stopTokenIds: [302], topLogprobs: 2 };
const prompt = [301, 117, 10];

describe.each([
  ['vllm', createVllmClient],
  ['sglang', createSglangClient],
] as const)('a %s request made elsewhere', (kind, createClient: (options: EngineClientOptions) => Engine) => {
  let double: EngineDouble | undefined;
  afterEach(() => double?.close());

  it('is handed over as data, with the current model name, and sent gives what the client gives', async () => {
    double = await startEngineDouble({ models: ['policy', 'policy@3'], script: seededScript(256, 302) });
    const client = createClient({ baseUrl: double.url, model: 'policy', timeoutMs: 9_000, retries: 1 });
    client.setModel('policy@3');
    const handed: ProtocolRequest[] = [];
    const exchange = async (request: ProtocolRequest): Promise<Generation[]> => {
      handed.push(request);
      return sendProtocolRequest(request, prompt, undefined);
    };
    const [elsewhere] = await client.generateN(prompt, { ...params, n: 1, exchange });
    // Nothing was sent by the client itself: the one request the double saw is the exchange's.
    expect(double.requests).toHaveLength(1);
    expect(handed).toStrictEqual([
      {
        kind,
        target: { name: kind, baseUrl: double.url, timeoutMs: 9_000, retries: 1, backoffMs: 250 },
        model: 'policy@3',
        baseModel: 'policy',
        params: { ...params, n: 1 },
      },
    ]);
    expect(double.requests[0]!.model).toBe('policy@3');
    const direct = await client.generate(prompt, params);
    expect(elsewhere).toStrictEqual(direct);
    expect(double.requests[1]!.body).toStrictEqual(double.requests[0]!.body);
  });
});
