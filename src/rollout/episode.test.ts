import { tool } from '@strands-agents/sdk';
import { afterEach, beforeAll, describe, expect, test } from 'vitest';
import { z } from 'zod';
import {
  startEngineDouble,
  type EngineDouble,
  type ReplyScript,
  type ScriptedReply,
} from '../__fixtures__/engine-double.js';
import { doubleExchanges, expectTitoInvariants } from '../__fixtures__/tito-invariants.js';
import { QWEN3_TOKENIZER_DIR, TINY_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import { createSglangClient } from '../engines/sglang.js';
import { createVllmClient } from '../engines/vllm.js';
import type { Engine } from '../engines/types.js';
import { CancelledError } from '../errors/index.js';
import { loadModelTokenizer, type ModelTokenizer } from '../tokens/model-tokenizer.js';
import { guardTool } from '../tools/guard.js';
import { runEpisode, type AgentSpec, type EpisodeResult, type RunEpisodeOptions } from './episode.js';
import { auditEpisodeDrift } from './episode-drift.js';

const add = tool({
  name: 'add',
  description: 'Add two numbers',
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  callback: ({ a, b }) => ({ sum: a + b }),
});
const broken = tool({
  name: 'broken',
  description: 'Always fails',
  inputSchema: z.object({}),
  callback: () => {
    throw new Error('disk on fire');
  },
});
const stall = tool({
  name: 'stall',
  description: 'Never returns',
  inputSchema: z.object({}),
  callback: () => new Promise<never>(() => undefined),
});
const task = { id: 't1', prompt: 'What is 2+3?', data: {} };
const spec: AgentSpec = {
  systemPrompt: 'You add.',
  tools: [add, broken, stall],
  maxTurns: 4,
  maxNewTokens: 256,
  sampling: { temperature: 1, topP: 1, topK: -1, seed: 7 },
  toolCallFormat: 'hermes',
};

let tiny: ModelTokenizer;
let double: EngineDouble | undefined;
beforeAll(async () => {
  tiny = await loadModelTokenizer(TINY_TOKENIZER_DIR);
});
afterEach(() => double?.close());

/** A double whose n-th request gets the n-th scripted model output (text is encoded, arrays are raw ids). */
async function scripted(
  tok: ModelTokenizer,
  turns: (string | number[] | ScriptedReply | 'hang')[],
): Promise<EngineDouble> {
  const script: ReplyScript = () => {
    const turn = turns[Math.min(double!.requests.length - 1, turns.length - 1)];
    if (turn === 'hang' || (typeof turn === 'object' && !Array.isArray(turn))) return turn;
    return { tokenIds: typeof turn === 'string' ? tok.encode(turn) : turn };
  };
  double = await startEngineDouble({ script });
  return double;
}

function episode(engine: Engine, overrides: Partial<RunEpisodeOptions> = {}, tok = tiny): Promise<EpisodeResult> {
  return runEpisode({ task, spec, engine, tokenizer: tok, policyVersion: 3, timeoutMs: 10_000, ...overrides });
}

const call = (name: string, args: string): string =>
  `<tool_call>\n{"name": "${name}", "arguments": ${args}}\n</tool_call>`;

describe('runEpisode', () => {
  test('returns a plain answer as one model turn', async () => {
    const d = await scripted(tiny, ['The answer is 5.<|im_end|>']);
    const result = await episode(createVllmClient({ baseUrl: d.url, model: 'policy' }));
    expectTitoInvariants(result, doubleExchanges(d));
    expect(tiny.decode(result.trajectory.ids)).toBe(
      '<|im_start|>system\nYou add.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n' +
        '{"type": "function", "function": {"name": "add", "description": "Add two numbers", "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"], "additionalProperties": false}}}\n' +
        '{"type": "function", "function": {"name": "broken", "description": "Always fails", "parameters": {"type": "object", "properties": {}, "additionalProperties": false}}}\n' +
        '{"type": "function", "function": {"name": "stall", "description": "Never returns", "parameters": {"type": "object", "properties": {}, "additionalProperties": false}}}\n' +
        '</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' +
        '<|im_start|>user\nWhat is 2+3?<|im_end|>\n<|im_start|>assistant\nThe answer is 5.<|im_end|>',
    );
    expect([result.finishReason, result.finalText, result.error]).toStrictEqual([
      'endTurn',
      'The answer is 5.',
      undefined,
    ]);
    expect(result.trajectory.segments.map((s) => [s.source, s.turn, s.policyVersion, s.finishReason])).toStrictEqual([
      ['prompt', 0, undefined, undefined],
      ['model', 0, 3, 'stop'],
    ]);
    expect(d.requests[0].body).toMatchObject({ max_tokens: 256, seed: 7, stop_token_ids: [302, 300], temperature: 1 });
  });

  test('returns qwen3_coder calls with values typed by the tool schema on every turn, not only the first', async () => {
    const xml = (a: number, b: number): string =>
      `<tool_call>\n<function=add>\n<parameter=a>\n${a}\n</parameter>\n<parameter=b>\n${b}\n</parameter>\n</function>\n</tool_call><|im_end|>`;
    const d = await scripted(tiny, [xml(2, 3), xml(1, 1), 'Done.<|im_end|>']);
    const result = await episode(createVllmClient({ baseUrl: d.url, model: 'policy' }), {
      spec: { ...spec, toolCallFormat: 'qwen3_coder' },
    });
    expectTitoInvariants(result, doubleExchanges(d));
    expect(result.toolCalls).toStrictEqual([
      { name: 'add', input: { a: 2, b: 3 }, status: 'success', output: '{"sum": 5}' },
      { name: 'add', input: { a: 1, b: 1 }, status: 'success', output: '{"sum": 2}' },
    ]);
  });

  test('returns a tool call, its result and the final answer with exact tokens', async () => {
    const d = await scripted(tiny, [`Let me add.\n${call('add', '{"a": 2, "b": 3}')}<|im_end|>`, 'It is 5.<|im_end|>']);
    const result = await episode(createVllmClient({ baseUrl: d.url, model: 'policy' }));
    expectTitoInvariants(result, doubleExchanges(d));
    const text = tiny.decode(result.trajectory.ids);
    expect(text.slice(text.indexOf('<|im_start|>user\nWhat'))).toBe(
      '<|im_start|>user\nWhat is 2+3?<|im_end|>\n<|im_start|>assistant\n' +
        `Let me add.\n${call('add', '{"a": 2, "b": 3}')}<|im_end|>\n<|im_start|>user\n<tool_response>\n{"sum": 5}\n</tool_response><|im_end|>\n<|im_start|>assistant\nIt is 5.<|im_end|>`,
    );
    expect(result.trajectory.segments.map((s) => s.source)).toStrictEqual(['prompt', 'model', 'tool', 'model']);
    expect(result.toolCalls).toStrictEqual([
      { name: 'add', input: { a: 2, b: 3 }, status: 'success', output: '{"sum": 5}' },
    ]);
    expect(result.messages).toStrictEqual([
      { role: 'system', content: [{ text: 'You add.' }] },
      { role: 'user', content: [{ text: 'What is 2+3?' }] },
      {
        role: 'assistant',
        content: [{ text: 'Let me add.' }, { toolUse: { name: 'add', toolUseId: 'call_0_0', input: { a: 2, b: 3 } } }],
      },
      {
        role: 'user',
        content: [{ toolResult: { toolUseId: 'call_0_0', status: 'success', content: [{ json: { sum: 5 } }] } }],
      },
      { role: 'assistant', content: [{ text: 'It is 5.' }] },
    ]);
    expect(result.stats).toMatchObject({
      turns: 2,
      toolCalls: 1,
      toolErrors: 0,
      toolErrorsByKind: {},
      toolCallsByTool: { add: 1 },
      toolErrorsByTool: {},
      truncated: false,
    });
    expect(auditEpisodeDrift(result, tiny, spec).identical).toBe(true);
  });

  test("keeps the SDK's history to the turn in progress, so its per-call work does not grow, and returns every message", async () => {
    // What the SDK clones, traces and scans on each model call is agent.messages; a tool sees it as it runs.
    const seen: number[] = [];
    const count = tool({
      name: 'add',
      description: 'Add two numbers, noting how long the agent history is',
      inputSchema: z.object({ a: z.number(), b: z.number() }),
      callback: ({ a, b }, context) => {
        seen.push(context!.agent.messages.length);
        return { sum: a + b };
      },
    });
    const calls = Array.from({ length: 6 }, () => `${call('add', '{"a": 2, "b": 3}')}<|im_end|>`);
    const d = await scripted(tiny, [...calls, 'It is 5.<|im_end|>']);
    const result = await episode(createVllmClient({ baseUrl: d.url, model: 'policy' }), {
      spec: { ...spec, tools: [count], maxTurns: 8 },
    });
    // The SDK appends a call and its result only after the tool ran, so the rendered history is all gone (it was 1, 3, 5, ...).
    expect(seen).toStrictEqual([0, 0, 0, 0, 0, 0]);
    expect(result.messages.map((m) => (m as { role: string }).role)).toStrictEqual([
      'system',
      'user',
      ...calls.flatMap(() => ['assistant', 'user']),
      'assistant',
    ]);
    expect(result.finalText).toBe('It is 5.');
    expectTitoInvariants(result, doubleExchanges(d));
    expect(auditEpisodeDrift(result, tiny, { ...spec, tools: [count] }).identical).toBe(true);
  });

  test('returns each model turn stamped with the policy version served when its request was sent', async () => {
    // A weight sync lands while the tool runs: the second turn is sampled by the newer policy.
    let served = 4;
    const bump = tool({
      name: 'add',
      description: 'Add two numbers',
      inputSchema: z.object({ a: z.number(), b: z.number() }),
      callback: ({ a, b }) => {
        served = 5;
        return { sum: a + b };
      },
    });
    const d = await scripted(tiny, [`${call('add', '{"a": 2, "b": 3}')}<|im_end|>`, 'It is 5.<|im_end|>']);
    const result = await episode(createVllmClient({ baseUrl: d.url, model: 'policy' }), {
      spec: { ...spec, tools: [bump] },
      policyVersion: () => served,
    });
    expect(result.trajectory.segments.map((s) => [s.source, s.policyVersion])).toStrictEqual([
      ['prompt', undefined],
      ['model', 4],
      ['tool', undefined],
      ['model', 5],
    ]);
  });

  test('returns several calls of one turn in order, with reasoning kept apart', async () => {
    const d = await scripted(tiny, [
      `<think>\ntwo sums\n</think>\n\n${call('add', '{"a": 1, "b": 1}')}\n${call('add', '{"a": 2, "b": 2}')}<|im_end|>`,
      'Done.<|im_end|>',
    ]);
    const result = await episode(createVllmClient({ baseUrl: d.url, model: 'policy' }));
    expectTitoInvariants(result, doubleExchanges(d));
    expect(tiny.decode(d.requests[1].promptIds.slice(-40))).toContain(
      '<tool_response>\n{"sum": 2}\n</tool_response>\n<tool_response>\n{"sum": 4}\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
    );
    expect((result.messages[2] as { content: unknown[] }).content.slice(0, 1)).toStrictEqual([
      { reasoning: { text: 'two sums' } },
    ]);
    expect(result.toolCalls.map((c) => c.output)).toStrictEqual(['{"sum": 2}', '{"sum": 4}']);
  });

  test('returns the calls past agent.max_tool_calls_per_turn counted as errors and not run, answered by one short result', async () => {
    let ran = 0;
    const count = tool({
      name: 'add',
      description: 'Add two numbers, counting the calls that ran',
      inputSchema: z.object({ a: z.number(), b: z.number() }),
      callback: ({ a, b }) => {
        ran++;
        return { sum: a + b };
      },
    });
    const calls = Array.from({ length: 5 }, (_, i) => call('add', `{"a": ${i}, "b": 1}`)).join('\n');
    const d = await scripted(tiny, [`${calls}<|im_end|>`, 'Done.<|im_end|>']);
    const result = await episode(createVllmClient({ baseUrl: d.url, model: 'policy' }), {
      spec: { ...spec, tools: [count], maxToolCallsPerTurn: 2 },
    });
    expectTitoInvariants(result, doubleExchanges(d));
    const capped =
      'Error: this call and the 2 after it were not run: at most 2 tool calls per turn (agent.max_tool_calls_per_turn)';
    expect(ran).toBe(2);
    expect(result.toolCalls.map((c) => [c.status, c.output])).toStrictEqual([
      ['success', '{"sum": 1}'],
      ['success', '{"sum": 2}'],
      ['error', capped],
      ['error', capped],
      ['error', capped],
    ]);
    // The model reads the two results and one error for the three calls past the cap, not one error each.
    const results = result.messages.flatMap((m) =>
      ((m as { content: { toolResult?: unknown }[] }).content ?? []).filter((b) => b.toolResult !== undefined),
    );
    expect(results).toHaveLength(3);
    const prompt = tiny.decode(d.requests[1].promptIds);
    expect(prompt.split('<tool_response>')).toHaveLength(4);
    expect(prompt.split(`<tool_response>\n${capped}\n</tool_response>`)).toHaveLength(2);
    expect(result.stats).toMatchObject({
      toolCalls: 5,
      toolErrors: 3,
      toolErrorsByKind: { too_many_calls: 3 },
      toolCallsByTool: { add: 5 },
      toolErrorsByTool: { add: 3 },
    });
  });

  test('returns malformed calls of every kind as counted error results the model sees', async () => {
    const turn1 = [
      '<tool_call>{"name": "add", "arguments": {"a": 2,}}</tool_call>',
      '<tool_call>["add"]</tool_call>',
      call('mul', '{"a": 2}'),
      call('add', '{"a": "two", "b": 3}'),
      call('broken', '{}'),
      '<tool_call>{"name": "add", "arguments": {"a": 1, "b": 1}}',
    ].join('\n');
    const d = await scripted(tiny, [`${turn1}<|im_end|>`, 'Sorry.<|im_end|>']);
    const result = await episode(createVllmClient({ baseUrl: d.url, model: 'policy' }));
    expectTitoInvariants(result, doubleExchanges(d));
    expect(result.stats.toolErrorsByKind).toStrictEqual({
      bad_json: 1,
      bad_call: 1,
      unknown_tool: 1,
      bad_arguments: 1,
      tool_failed: 1,
      unterminated: 1,
    });
    expect(result.stats).toMatchObject({ toolCalls: 6, toolErrors: 6, turns: 2 });
    // Per tool: the three failed 'add' calls and the throwing 'broken'; 'mul' and the nameless call name no tool of the agent.
    expect([result.stats.toolCallsByTool, result.stats.toolErrorsByTool]).toStrictEqual([
      { add: 3, broken: 1 },
      { add: 3, broken: 1 },
    ]);
    expect(result.toolCalls.map((c) => [c.name, c.status, c.output])).toStrictEqual([
      [
        'add',
        'error',
        'Error: the tool call is not valid JSON (Expected double-quoted property name in JSON at position 37 (line 1 column 38))',
      ],
      [
        'invalid_tool_call',
        'error',
        'Error: a tool call must be a JSON object with a string "name" and an object "arguments"',
      ],
      ['mul', 'error', "Error: unknown tool 'mul'; available tools: add, broken, stall"],
      ['add', 'error', "Error: invalid arguments for 'add': arguments.a: expected number, got string"],
      ['broken', 'error', 'Error: disk on fire'],
      ['add', 'error', 'Error: the tool call was not closed with </tool_call>'],
    ]);
    const seen = tiny.decode(d.requests[1].promptIds);
    expect(seen).toContain(
      "<tool_response>\nError: unknown tool 'mul'; available tools: add, broken, stall\n</tool_response>",
    );
    expect(result.finishReason).toBe('endTurn');
  });

  test('returns guarded tools that throw, hang or return something unserialisable as error results counted per tool', async () => {
    const huge = tool({
      name: 'huge',
      description: 'Returns a BigInt',
      inputSchema: z.object({}),
      callback: () => ({ n: 10n ** 30n }) as never,
    });
    const tools = [add, broken, stall, huge].map((t) => guardTool(t, 100));
    const turn1 = [
      call('broken', '{}'),
      call('stall', '{}'),
      call('huge', '{}'),
      call('broken', '{}'),
      call('add', '{"a": 1, "b": 2}'),
    ].join('\n');
    const d = await scripted(tiny, [`${turn1}<|im_end|>`, 'Sorry.<|im_end|>']);
    const result = await episode(createVllmClient({ baseUrl: d.url, model: 'policy' }), { spec: { ...spec, tools } });
    expect(result.toolCalls.map((c) => [c.name, c.status])).toStrictEqual([
      ['broken', 'error'],
      ['stall', 'error'],
      ['huge', 'error'],
      ['broken', 'error'],
      ['add', 'success'],
    ]);
    expect(result.stats).toMatchObject({
      toolErrors: 4,
      toolErrorsByKind: { tool_failed: 4 },
      toolCallsByTool: { broken: 2, stall: 1, huge: 1, add: 1 },
      toolErrorsByTool: { broken: 2, stall: 1, huge: 1 },
    });
  });

  test('returns truncated on a length stop, without running the calls it holds', async () => {
    const d = await scripted(tiny, [`${call('add', '{"a": 2, "b": 3}')} and then more and more text`]);
    const result = await episode(createVllmClient({ baseUrl: d.url, model: 'policy' }), {
      spec: { ...spec, maxNewTokens: 40 },
    });
    expectTitoInvariants(result, doubleExchanges(d));
    expect([
      result.finishReason,
      result.stats.truncated,
      result.stats.toolCalls,
      result.trajectory.counters.truncations,
    ]).toStrictEqual(['truncated', true, 0, 1]);
    expect(result.trajectory.segments.at(-1)).toMatchObject({ source: 'model', length: 40, finishReason: 'length' });
  });

  test('returns limitTurns after maxTurns model calls, ending on the model tokens', async () => {
    const d = await scripted(tiny, [`${call('add', '{"a": 1, "b": 1}')}<|im_end|>`]);
    const result = await episode(createVllmClient({ baseUrl: d.url, model: 'policy' }), {
      spec: { ...spec, maxTurns: 3 },
    });
    expectTitoInvariants(result, doubleExchanges(d));
    expect([result.finishReason, result.stats.turns, d.requests.length, result.toolCalls.length]).toStrictEqual([
      'limitTurns',
      3,
      3,
      3,
    ]);
    expect(result.trajectory.segments.at(-1)?.source).toBe('model');
  });

  test('returns generation clamped to the token budget, and maxTotalTokens when no room is left', async () => {
    const d = await scripted(tiny, [`${call('add', '{"a": 1, "b": 1}')}<|im_end|>`]);
    const engine = createVllmClient({ baseUrl: d.url, model: 'policy' });
    const first = await episode(engine, { spec: { ...spec, maxTurns: 1 } });
    const [promptLength, outputLength] = [first.trajectory.promptLength, first.stats.generatedTokens];
    d.requests.length = 0;
    const clamped = await episode(engine, { spec: { ...spec, maxTotalTokens: promptLength + outputLength + 40 } });
    expectTitoInvariants(clamped, doubleExchanges(d));
    expect(d.requests[1].maxTokens).toBe(promptLength + outputLength + 40 - d.requests[1].promptIds.length);
    expect([clamped.finishReason, clamped.trajectory.length]).toStrictEqual([
      'truncated',
      promptLength + outputLength + 40,
    ]);
    d.requests.length = 0;
    const stopped = await episode(engine, { spec: { ...spec, maxTotalTokens: promptLength + outputLength + 5 } });
    expectTitoInvariants(stopped, doubleExchanges(d));
    expect([stopped.finishReason, d.requests.length, stopped.stats.turns, stopped.toolCalls.length]).toStrictEqual([
      'maxTotalTokens',
      1,
      1,
      1,
    ]);
    expect(stopped.messages.filter((m) => (m as { role: string }).role === 'assistant')).toHaveLength(1);
  });

  test('returns user turns as environment tokens and ends when the user stops', async () => {
    const d = await scripted(tiny, ['5<|im_end|>', '7<|im_end|>']);
    const asked: number[] = [];
    const user = async (conversation: readonly unknown[]): Promise<string | null> => {
      asked.push(conversation.length);
      return asked.length === 1 ? 'And 3+4?' : null;
    };
    const result = await episode(createVllmClient({ baseUrl: d.url, model: 'policy' }), { user });
    expectTitoInvariants(result, doubleExchanges(d));
    expect([result.finishReason, result.finalText, asked]).toStrictEqual(['userStop', '7', [3, 5]]);
    expect(result.trajectory.segments.map((s) => s.source)).toStrictEqual(['prompt', 'model', 'user', 'model']);
    expect(tiny.decode(result.trajectory.ids.slice(result.trajectory.segments[2].start))).toBe(
      '\n<|im_start|>user\nAnd 3+4?<|im_end|>\n<|im_start|>assistant\n7<|im_end|>',
    );
  });

  test('returns the same trajectory through the SGLang client', async () => {
    const d = await scripted(tiny, [`${call('add', '{"a": 2, "b": 3}')}<|im_end|>`, 'It is 5.<|im_end|>']);
    const viaVllm = await episode(createVllmClient({ baseUrl: d.url, model: 'policy' }));
    d.requests.length = 0;
    const viaSglang = await episode(createSglangClient({ baseUrl: d.url, model: 'policy' }));
    expectTitoInvariants(viaSglang, doubleExchanges(d));
    expect(viaSglang.trajectory.toJSON()).toStrictEqual(viaVllm.trajectory.toJSON());
  });

  test('returns an engine error as a failed episode instead of throwing', async () => {
    const d = await scripted(tiny, [
      { status: 400, body: { object: 'error', message: 'prompt is too long', code: 400 } } as unknown as ScriptedReply,
    ]);
    const result = await episode(createVllmClient({ baseUrl: d.url, model: 'policy' }));
    expect([result.finishReason, result.error, result.trajectory.length]).toStrictEqual([
      'error',
      'vllm POST /v1/completions answered 400: prompt is too long',
      0,
    ]);
  });

  test('returns timeout when the engine hangs, and when a tool hangs', async () => {
    const d = await scripted(tiny, ['hang']);
    const hung = await episode(createVllmClient({ baseUrl: d.url, model: 'policy' }), { timeoutMs: 200 });
    expect([hung.finishReason, hung.error]).toStrictEqual(['timeout', 'episode timed out after 200 ms']);
    await d.close();
    const d2 = await scripted(tiny, [`${call('stall', '{}')}<|im_end|>`]);
    const stalled = await episode(createVllmClient({ baseUrl: d2.url, model: 'policy' }), { timeoutMs: 300 });
    expect([stalled.finishReason, stalled.stats.turns]).toStrictEqual(['timeout', 1]);
    expectTitoInvariants(stalled, doubleExchanges(d2));
  });

  test('rejects with CancelledError when the caller cancels', async () => {
    const d = await scripted(tiny, ['hang']);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    await expect(
      episode(createVllmClient({ baseUrl: d.url, model: 'policy' }), { signal: controller.signal }),
    ).rejects.toThrow(CancelledError);
  });

  test('returns a Qwen3 thinking episode whose drift audit finds the stripped <think>', async () => {
    const qwen = await loadModelTokenizer(QWEN3_TOKENIZER_DIR);
    const d = await scripted(qwen, [
      `<think>\nneed add\n</think>\n\n${call('add', '{"a": 2, "b": 3}')}<|im_end|>`,
      '<think>\nsum is 5\n</think>\n\n5<|im_end|>',
      '<think>\neasy\n</think>\n\n7<|im_end|>',
    ]);
    const user = async (c: readonly unknown[]): Promise<string | null> => (c.length < 6 ? 'And 3+4?' : null);
    const qSpec = { ...spec, tools: [add], chatTemplateKwargs: { enable_thinking: true } };
    const result = await episode(createVllmClient({ baseUrl: d.url, model: 'policy' }), { user, spec: qSpec }, qwen);
    expectTitoInvariants(result, doubleExchanges(d));
    expect(result.trajectory.ids.filter((id) => id === 151667)).toHaveLength(3);
    const report = auditEpisodeDrift(result, qwen, qSpec);
    expect(report.identical).toBe(false);
    expect(report.hunks.map((h) => h.trajectory.text)).toStrictEqual([
      '<think>\nneed add\n</think>\n\n',
      '<think>\nsum is 5\n</think>\n\n',
    ]);
    expect(report.hunks.every((h) => h.rerendered.text === '')).toBe(true);
  });
});
