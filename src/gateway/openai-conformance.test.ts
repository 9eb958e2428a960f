import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startEngineDouble, type EngineDouble } from '../__fixtures__/engine-double.js';
import { doubleExchanges, expectTitoInvariants } from '../__fixtures__/tito-invariants.js';
import { TINY_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import { createVllmClient } from '../engines/vllm.js';
import { rolloutFigures } from '../run/step-record.js';
import { loadModelTokenizer, type ModelTokenizer } from '../tokens/model-tokenizer.js';
import { hermesParser } from '../tokens/tool-calls/hermes.js';
import { externalEpisodeResult } from './external-episode.js';
import type { GatewayEpisodeOptions } from './gateway-episode.js';
import { startGateway, type Gateway } from './server.js';
import { ADD_TOOL } from '../__fixtures__/openai-tools.js';

// Where OpenAI and vLLM agree on what a Chat Completions server answers, the gateway answers the same:
// the official `openai` client against the gateway, in front of an engine double whose "model" writes
// exactly the text each test scripts.
const CALL = (a: number, b: number): string =>
  `<tool_call>\n{"name": "add", "arguments": {"a": ${a}, "b": ${b}}}\n</tool_call>`;
const add = ADD_TOOL;
const ask = [{ role: 'user' as const, content: 'What is 2 + 3?' }];

let tokenizer: ModelTokenizer;
let double: EngineDouble;
let gateway: Gateway;
/** What the scripted model writes next, one entry per engine call (the last repeats). */
let script: (readonly number[])[] = [];
let answered = 0;
let opened = 0;

beforeAll(async () => {
  tokenizer = await loadModelTokenizer(TINY_TOKENIZER_DIR);
  double = await startEngineDouble({
    script: () => ({ tokenIds: script[Math.min(answered++, script.length - 1)]! }),
  });
  gateway = await startGateway({ modelName: () => 'policy' });
});
afterAll(async () => {
  await gateway?.stop();
  await double?.close();
});

/** The model's next replies, as text (each ends its turn with <|im_end|> unless `open`). */
function writes(...texts: string[]): void {
  script = texts.map((t) => tokenizer.encode(t));
  answered = 0;
}

/** Opens an episode on `on` (the shared gateway by default); returns an openai client pointed at it. */
function episode(
  on: Gateway = gateway,
  id = `c-${++opened}`,
  settings: Partial<GatewayEpisodeOptions> = {},
): { client: OpenAI; endpoint: ReturnType<Gateway['open']>; from: number } {
  const options: GatewayEpisodeOptions = {
    engine: createVllmClient({ baseUrl: double.url, model: 'policy' }),
    tokenizer,
    parser: hermesParser,
    policyVersion: 0,
    maxTurns: 6,
    maxNewTokens: 256,
    sampling: { temperature: 1, topP: 1, topK: -1 },
    ...settings,
  };
  const endpoint = on.open(id, options);
  return {
    client: new OpenAI({ baseURL: endpoint.baseUrl, apiKey: endpoint.apiKey, maxRetries: 0 }),
    endpoint,
    from: double.requests.length,
  };
}

async function streamed(
  client: OpenAI,
  body: OpenAI.Chat.ChatCompletionCreateParamsStreaming,
): Promise<OpenAI.Chat.Completions.ChatCompletionChunk[]> {
  const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
  for await (const chunk of await client.chat.completions.create(body)) chunks.push(chunk);
  return chunks;
}

const failure = async (work: Promise<unknown>): Promise<{ status: number; param: unknown; message: string }> => {
  const error = (await work.then(
    () => undefined,
    (e: unknown) => e,
  )) as InstanceType<typeof OpenAI.APIError>;
  expect(error).toBeInstanceOf(OpenAI.APIError);
  return { status: error.status as number, param: error.param, message: error.message };
};

describe('gateway conformance with the openai client', () => {
  test('returns only the first call when parallel_tool_calls is false, and answers the dropped one for the model', async () => {
    writes(`${CALL(2, 3)}\n${CALL(4, 5)}<|im_end|>`, 'The sum is 5.<|im_end|>');
    const { client, endpoint, from } = episode();
    const body = { model: 'policy', messages: ask, tools: [add], parallel_tool_calls: false };
    const reply = (await client.chat.completions.create(body)).choices[0]!;
    expect([
      reply.finish_reason,
      reply.message.tool_calls?.map((c) => c.type === 'function' && c.function),
    ]).toStrictEqual(['tool_calls', [{ name: 'add', arguments: '{"a":2,"b":3}' }]]);
    // The agent answers the one call it got, as any OpenAI client does: the same segment goes on.
    const call = reply.message.tool_calls![0]!;
    await client.chat.completions.create({
      ...body,
      messages: [...ask, reply.message, { role: 'tool', tool_call_id: call.id, content: '5' }],
    });
    const result = externalEpisodeResult(endpoint.episode, { timedOut: false, log: '' }, undefined, 0);
    expect(endpoint.episode.segments).toHaveLength(1);
    expectTitoInvariants(result, doubleExchanges(double).slice(from));
    const [first, second] = [double.requests[from]!, double.requests[from + 1]!];
    const continuation = tokenizer.decode(second.promptIds.slice(first.promptIds.length + first.outputs[0]!.length));
    expect(continuation).toContain(
      'Error: this call was not run: only one call per turn is allowed (parallel_tool_calls is false)',
    );
    expect(result.stats.toolErrors).toBe(0);

    // Streamed alike; without the flag both calls go back.
    writes(`${CALL(2, 3)}\n${CALL(4, 5)}<|im_end|>`);
    const chunks = await streamed(episode().client, { ...body, stream: true });
    expect(chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []).map((c) => c.index)).toStrictEqual([0]);
    const both = await episode().client.chat.completions.create({ model: 'policy', messages: ask, tools: [add] });
    expect(both.choices[0]!.message.tool_calls).toHaveLength(2);
  });

  test('returns at most agent.max_tool_calls_per_turn calls, and answers and counts the others for the model', async () => {
    writes(`${[1, 2, 3, 4, 5].map((a) => CALL(a, 1)).join('\n')}<|im_end|>`, 'Done.<|im_end|>');
    const { client, endpoint, from } = episode(gateway, undefined, { maxToolCallsPerTurn: 2 });
    const body = { model: 'policy', messages: ask, tools: [add] };
    const reply = (await client.chat.completions.create(body)).choices[0]!;
    expect([
      reply.finish_reason,
      reply.message.tool_calls?.map((c) => c.type === 'function' && c.function),
    ]).toStrictEqual([
      'tool_calls',
      [
        { name: 'add', arguments: '{"a":1,"b":1}' },
        { name: 'add', arguments: '{"a":2,"b":1}' },
      ],
    ]);
    const results = reply.message.tool_calls!.map((c, i) => ({
      role: 'tool' as const,
      tool_call_id: c.id,
      content: String(i + 2),
    }));
    await client.chat.completions.create({ ...body, messages: [...ask, reply.message, ...results] });
    const result = externalEpisodeResult(endpoint.episode, { timedOut: false, log: '' }, undefined, 0);
    expectTitoInvariants(result, doubleExchanges(double).slice(from));
    const [first, second] = [double.requests[from]!, double.requests[from + 1]!];
    const continuation = tokenizer.decode(second.promptIds.slice(first.promptIds.length + first.outputs[0]!.length));
    // one short result for the three calls past the cap, not one each
    const capped =
      'Error: this call and the 2 after it were not run: at most 2 tool calls per turn (agent.max_tool_calls_per_turn)';
    expect(continuation.split(capped)).toHaveLength(2);
    expect(continuation.split('Error:')).toHaveLength(2);
    expect(result.stats).toMatchObject({ toolCalls: 5, toolErrors: 3, toolErrorsByKind: { too_many_calls: 3 } });
  });

  test('returns the text the model generated, whitespace included, streamed and not', async () => {
    writes('\n  Indented answer.  \n<|im_end|>');
    const { client } = episode();
    const plain = await client.chat.completions.create({ model: 'policy', messages: ask });
    expect(plain.choices[0]!.message.content).toBe('\n  Indented answer.  \n');
    const chunks = await streamed(client, {
      model: 'policy',
      messages: [...ask, plain.choices[0]!.message, { role: 'user', content: 'Again?' }],
      stream: true,
    });
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('\n  Indented answer.  \n');

    // The text before a call keeps its newline; the next request still continues the recorded conversation.
    writes(`Let me add.\n${CALL(2, 3)}<|im_end|>`, 'Five.<|im_end|>');
    const withCall = episode();
    const reply = (await withCall.client.chat.completions.create({ model: 'policy', messages: ask, tools: [add] }))
      .choices[0]!;
    expect([reply.finish_reason, reply.message.content]).toStrictEqual(['tool_calls', 'Let me add.\n']);
    await withCall.client.chat.completions.create({
      model: 'policy',
      messages: [...ask, reply.message, { role: 'tool', tool_call_id: reply.message.tool_calls![0]!.id, content: '5' }],
      tools: [add],
    });
    expect(withCall.endpoint.episode.segments).toHaveLength(1);
  });

  test('rejects tool_choice without tools with a 400 naming tool_choice, as vLLM does; tool_choice none is accepted', async () => {
    writes('Five.<|im_end|>');
    const { client, endpoint } = episode();
    for (const tools of [undefined, []]) {
      expect(
        await failure(
          client.chat.completions.create({
            model: 'policy',
            messages: ask,
            tool_choice: 'auto',
            ...(tools ? { tools } : {}),
          }),
        ),
      ).toStrictEqual({ status: 400, param: 'tool_choice', message: expect.stringContaining('`tools` must be set') });
    }
    expect(endpoint.episode.modelCalls).toBe(0);
    const none = await client.chat.completions.create({ model: 'policy', messages: ask, tool_choice: 'none' });
    expect(none.choices[0]!.message.content).toBe('Five.');
  });

  test('returns the complete calls of a reply cut by max_tokens as tool calls, with finish_reason length', async () => {
    const call = tokenizer.encode(CALL(2, 3));
    script = [[...call, ...tokenizer.encode('\nThen I will check the<|im_end|>')]];
    answered = 0;
    const { client } = episode();
    const body = { model: 'policy', messages: ask, tools: [add], max_tokens: call.length };
    const reply = (await client.chat.completions.create(body)).choices[0]!;
    expect([reply.finish_reason, reply.message.content, reply.message.tool_calls?.length]).toStrictEqual([
      'length',
      null,
      1,
    ]);
    answered = 0;
    const chunks = await streamed(episode().client, { ...body, stream: true });
    expect([
      chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []).map((c) => c.function?.name),
      chunks.at(-1)?.choices[0]?.finish_reason,
    ]).toStrictEqual([['add'], 'length']);
  });

  test('counts tool calls and tool errors over every segment of an episode that rewrote its history', async () => {
    const bad = '<tool_call>\n{"name": "add", "arguments": {"a": 2,, "b": 3}}\n</tool_call>';
    writes(`${CALL(2, 3)}\n${bad}<|im_end|>`, `${CALL(1, 1)}<|im_end|>`);
    const { client, endpoint } = episode();
    const first = (await client.chat.completions.create({ model: 'policy', messages: ask, tools: [add] })).choices[0]!;
    expect(first.message.tool_calls).toHaveLength(1);
    // The agent drops the exchange and asks afresh: a new segment, whose reply is one well-formed call.
    await client.chat.completions.create({
      model: 'policy',
      messages: [{ role: 'user', content: 'What is 1 + 1?' }],
      tools: [add],
    });
    const result = externalEpisodeResult(endpoint.episode, { timedOut: false, log: '' }, undefined, 0);
    expect(endpoint.episode.segments).toHaveLength(2);
    // Every call the model wrote counts, a malformed one included (as the built-in agent counts them).
    expect([result.stats.toolCalls, result.stats.toolErrors, result.stats.toolCallsByTool]).toStrictEqual([
      3,
      1,
      { add: 2 },
    ]);
    const rollout = {
      task: { id: 't', prompt: 'p', data: {} },
      group: 0,
      sample: 0,
      policyVersion: 0,
      reward: 0,
      parts: {},
      success: false,
      failed: false,
      episode: result,
    };
    expect(rolloutFigures([rollout]).tool_error_rate).toBeCloseTo(1 / 3);
  });

  test('returns tool-call and completion ids unique to the run, the same for the same episode and turn within it', async () => {
    const other = await startGateway({ modelName: () => 'policy' });
    try {
      const ids = async (on: Gateway): Promise<string[]> => {
        writes(`${CALL(2, 3)}<|im_end|>`);
        const completion = await episode(on, 'same-episode').client.chat.completions.create({
          model: 'policy',
          messages: ask,
          tools: [add],
        });
        return [completion.id, completion.choices[0]!.message.tool_calls![0]!.id];
      };
      const [here, there] = [await ids(gateway), await ids(other)];
      expect(here[0]).not.toBe(there[0]);
      expect(here[1]).not.toBe(there[1]);
      // Within a run the id is a function of the run's random prefix, episode, turn and position.
      expect(gateway.idPrefix).toMatch(/^[0-9a-f]{12}$/);
      expect(here).toStrictEqual([
        `chatcmpl-${gateway.idPrefix}-same-episode-0`,
        `call_${gateway.idPrefix}_same-episode_0_0`,
      ]);
    } finally {
      await other.stop();
    }
  });

  test('sends usage: null on every chunk but the last when include_usage is set, as OpenAI does', async () => {
    writes('Five.<|im_end|>');
    const chunks = await streamed(episode().client, {
      model: 'policy',
      messages: ask,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(chunks.slice(0, -1).map((c) => c.usage)).toStrictEqual(chunks.slice(0, -1).map(() => null));
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { completion_tokens: expect.any(Number) } });
  });
});
