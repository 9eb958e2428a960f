import { tool } from '@strands-agents/sdk';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { z } from 'zod';
import { adversarialIds, adversarialText } from '../__fixtures__/adversarial-output.js';
import { startEngineDouble, type EngineDouble } from '../__fixtures__/engine-double.js';
import { doubleExchanges, expectTitoInvariants } from '../__fixtures__/tito-invariants.js';
import { TINY_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import { createVllmClient } from '../engines/vllm.js';
import { loadModelTokenizer, type ModelTokenizer } from '../tokens/model-tokenizer.js';
import { hermesParser } from '../tokens/tool-calls/hermes.js';
import { runEpisode, type AgentSpec } from './episode.js';

// Property-based fuzzing of the model-output path: whatever the policy writes, nothing escapes the
// episode, every generated token stays trained-on, every call gets a result, and what the model is
// shown next stays bounded. `npm test` runs a fixed seed and few runs; `npm run fuzz` many more
// (ATK_FUZZ_RUNS, ATK_FUZZ_SEED).
const RUNS = Number(process.env.ATK_FUZZ_RUNS ?? 0);
const SEED = Number(process.env.ATK_FUZZ_SEED ?? 14);
const settings = (normalRuns: number): fc.Parameters<unknown> => ({
  seed: SEED,
  numRuns: RUNS > 0 ? RUNS : normalRuns,
  endOnFailure: true,
});

/** Characters an error result may add per call: the fixed text plus at most 200 echoed characters, twice. */
const PER_CALL_BOUND = 700;

const add = tool({
  name: 'add',
  description: 'Add two numbers',
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  callback: ({ a, b }) => ({ sum: a + b }),
});
const spec: AgentSpec = {
  tools: [add],
  maxTurns: 2,
  maxNewTokens: 16_384,
  sampling: { temperature: 1, topP: 1, topK: -1 },
  toolCallFormat: 'hermes',
};
const task = { id: 'fuzz', prompt: 'What is 2+3?', data: {} };

let tiny: ModelTokenizer;
let double: EngineDouble;
let firstTurn: number[] = [];
beforeAll(async () => {
  tiny = await loadModelTokenizer(TINY_TOKENIZER_DIR);
  const done = tiny.encode('Done.<|im_end|>');
  // Each episode starts with an empty request log: its first request gets the fuzzed turn.
  double = await startEngineDouble({ script: () => ({ tokenIds: double.requests.length === 1 ? firstTurn : done }) });
});
afterAll(() => double.close());

describe('model output (fuzz)', () => {
  test('returns a parse of any text without throwing, with serialisable arguments and bounded messages', () => {
    fc.assert(
      fc.property(adversarialText, (text) => {
        const parsed = hermesParser.parse(text);
        for (const call of parsed.calls) {
          if (call.ok) expect(typeof JSON.stringify(call.arguments)).toBe('string');
          else expect(call.message.length).toBeLessThan(PER_CALL_BOUND);
        }
      }),
      settings(300),
    );
  });

  test('returns an episode for any completion: no throw, every token kept with mask 1, every call answered, the next prompt bounded', async () => {
    const maxId = Math.max(...tiny.eosTokenIds, tiny.tokenToId('</think>') ?? 0);
    await fc.assert(
      fc.asyncProperty(
        adversarialIds((text) => tiny.encode(text), maxId),
        async (ids) => {
          firstTurn = ids;
          double.requests.length = 0;
          const result = await runEpisode({
            task,
            spec,
            engine: createVllmClient({ baseUrl: double.url, model: 'policy' }),
            tokenizer: tiny,
            policyVersion: 0,
            timeoutMs: 30_000,
          });
          const exchanges = doubleExchanges(double);
          expect([result.error, result.errorKind]).toStrictEqual([undefined, undefined]);
          expectTitoInvariants(result, exchanges);

          const first = exchanges[0]!;
          const cut = result.trajectory.segments.find((s) => s.source === 'model')?.finishReason === 'length';
          const visible = tiny.eosTokenIds.includes(first.tokenIds.at(-1) ?? -1)
            ? first.tokenIds.slice(0, -1)
            : first.tokenIds;
          const calls = cut ? [] : hermesParser.parse(tiny.decode(visible)).calls;
          expect(result.toolCalls).toHaveLength(calls.length);
          for (const record of result.toolCalls)
            expect(record.status === 'success' || record.output.startsWith('Error: ')).toBe(true);
          if (exchanges.length > 1) {
            const shown = tiny.decode(exchanges[1]!.promptIds.slice(first.promptIds.length + first.tokenIds.length));
            expect(shown.length).toBeLessThanOrEqual(100 + calls.length * PER_CALL_BOUND);
          }
        },
      ),
      settings(12),
    );
  });
});
