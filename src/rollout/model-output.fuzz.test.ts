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
import type { ChatTool } from '../tokens/chat-types.js';
import { hermesParser } from '../tokens/tool-calls/hermes.js';
import { toolCallParsers } from '../tokens/tool-calls/index.js';
import type { ToolCallToRender } from '../tokens/tool-calls/types.js';
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

  test.each(Object.values(toolCallParsers))(
    'returns the calls $format renders, parsed back to the same names and arguments',
    (parser) => {
      fc.assert(
        // One tool per name, as a request offers them (a schema per name).
        fc.property(
          fc.uniqueArray(renderableCall, { minLength: 1, maxLength: 4, selector: (c) => c.name }),
          (calls) => {
            const parsed = parser.parse(`Let me see.\n${parser.renderCalls(calls)}`, { tools: schemaTools(calls) });
            expect(parsed.calls.map((c) => (c.ok ? [c.name, c.arguments] : c.message))).toStrictEqual(
              // fast-check's dictionaries have no prototype; parsed objects do.
              calls.map((c) => [c.name, JSON.parse(JSON.stringify(c.arguments))]),
            );
          },
        ),
        settings(100),
      );
    },
  );

  test.each(Object.values(toolCallParsers))(
    'returns a $format parse of broken and spliced output without throwing, with one-line bounded messages',
    (parser) => {
      const spliced = fc
        .tuple(
          fc.array(renderableCall, { minLength: 1, maxLength: 3 }),
          fc.array(fc.tuple(fc.nat(), fc.nat(), fc.oneof(fc.constantFrom(...MARKERS), adversarialText)), {
            maxLength: 4,
          }),
        )
        .map(([calls, cuts]) =>
          cuts.reduce((text, [at, length, insert]) => {
            const from = at % (text.length + 1);
            return text.slice(0, from) + insert + text.slice(from + (length % 20));
          }, parser.renderCalls(calls)),
        );
      fc.assert(
        fc.property(fc.oneof(spliced, adversarialText), (text) => {
          const parsed = parser.parse(text, { tools: [] });
          for (const call of parsed.calls) {
            if (call.ok) expect(typeof JSON.stringify(call.arguments)).toBe('string');
            else {
              expect(call.message.length).toBeLessThan(PER_CALL_BOUND);
              expect(call.message).not.toMatch(/[\r\n]/);
            }
          }
        }),
        settings(150),
      );
    },
  );

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

/** The markup of every format, spliced into rendered calls to break them in each format's own terms. */
const MARKERS = [
  '<tool_call>',
  '</tool_call>',
  '<function=',
  '</function>',
  '<parameter=',
  '</parameter>',
  '<|python_tag|>',
  '<|python_start|>',
  '<|python_end|>',
  ';',
  '[',
  ']',
  '(',
  ')',
  '=',
  '"',
  "'",
  '[TOOL_CALLS]',
  '[ARGS]',
  '<|start|>assistant',
  '<|channel|>',
  'commentary to=functions.f',
  '<|message|>',
  '<|call|>',
  '<|end|>',
  '<arg_key>',
  '</arg_value>',
  '<｜tool▁calls▁begin｜>',
  '<｜tool▁call▁begin｜>',
  '<｜tool▁sep｜>',
  '<｜tool▁call▁end｜>',
  '<|tool_calls_section_begin|>',
  '<|tool_call_begin|>',
  '<|tool_call_argument_begin|>',
  '<|tool_call_end|>',
  '<think>',
  '</think>',
  '\n',
];

// Strings hold any character but '<', which opens the markup of most formats (a model writes its
// markers as special tokens, never inside an argument); qwen3_coder reads a bare "null" as null, and
// glm45 trims its values, as vLLM does.
const text = fc
  .string({ unit: 'grapheme', maxLength: 12 })
  .filter((s) => !s.includes('<') && s.toLowerCase() !== 'null' && s.trim() === s);
const identifier = fc.stringMatching(/^[a-z_][a-z0-9_]{0,7}$/);
const number = fc.oneof(
  fc.integer({ min: -1e6, max: 1e6 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Object.is(n, -0)),
);
const { value: argumentValue } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    text,
    number,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(text, tie('value'), { maxKeys: 3 }),
  ),
}));
const renderableCall: fc.Arbitrary<ToolCallToRender> = fc.record({
  name: identifier,
  arguments: fc.dictionary(identifier, argumentValue, { maxKeys: 4 }),
});

/** Tools whose schemas type each argument as the call holds it, as a tool's schema would (qwen3_coder converts by them). */
function schemaTools(calls: readonly ToolCallToRender[]): ChatTool[] {
  const typeOf = (v: unknown): string =>
    v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'object' ? 'object' : typeof v;
  return calls.map((c) => ({
    type: 'function',
    function: {
      name: c.name,
      description: '',
      parameters: {
        type: 'object',
        properties: Object.fromEntries(Object.entries(c.arguments).map(([k, v]) => [k, { type: typeOf(v) }])),
      },
    },
  }));
}
