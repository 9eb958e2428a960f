import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startEngineDouble, type EngineDouble } from '../__fixtures__/engine-double.js';
import { TINY_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import { createVllmClient } from '../engines/vllm.js';
import type { Engine } from '../engines/types.js';
import { loadModelTokenizer, type ModelTokenizer } from '../tokens/model-tokenizer.js';
import { builtInEpisodes, collectRollout, type EpisodeKit } from './collect.js';

let tiny: ModelTokenizer;
let double: EngineDouble;
let engine: Engine;
beforeAll(async () => {
  tiny = await loadModelTokenizer(TINY_TOKENIZER_DIR);
  double = await startEngineDouble({ script: () => ({ tokenIds: tiny.encode('It is 5.<|im_end|>') }) });
  engine = createVllmClient({ baseUrl: double.url, model: 'policy' });
});
afterAll(() => double.close());

function kit(overrides: Partial<EpisodeKit> = {}): EpisodeKit {
  return {
    engine,
    tokenizer: tiny,
    tools: [],
    reward: async () => ({ score: 1, parts: { answer: 1 } }),
    agent: { maxTurns: 1, maxNewTokens: 64, toolCallFormat: 'hermes' },
    systemPrompt: () => undefined,
    successThreshold: 1,
    timeoutMs: 10_000,
    runner: builtInEpisodes,
    ...overrides,
  };
}

const task = { id: 't', prompt: 'What is 2+3?', data: {} };
const request = { task, group: 0, sample: 0, seed: 1, temperature: 1, topP: 1, topK: -1, policyVersion: 0 };

describe('collectRollout with reward.overlong', () => {
  test('returns the reward plus the overlong penalty, the penalty as a part, and success judged before it', async () => {
    const plain = await collectRollout(kit(), request);
    const generated = plain.episode.stats.generatedTokens;
    expect(generated).toBeGreaterThan(1);
    expect([plain.reward, plain.parts, plain.success]).toStrictEqual([1, { answer: 1 }, true]);
    // L_max = L_cache = 2g: the penalty is ((0 - g) / 2g) = -0.5 whatever g is.
    const shaped = await collectRollout(
      kit({ overlong: { max_tokens: 2 * generated, buffer: 2 * generated } }),
      request,
    );
    expect([shaped.reward, shaped.parts, shaped.success]).toStrictEqual([0.5, { answer: 1, overlong: -0.5 }, true]);
    // Inside the free span the penalty is 0 and still recorded.
    const free = await collectRollout(kit({ overlong: { max_tokens: generated + 10, buffer: 10 } }), request);
    expect([free.reward, free.parts]).toStrictEqual([1, { answer: 1, overlong: 0 }]);
  });
});
