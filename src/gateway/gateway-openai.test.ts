import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { calculatorTool as calculator, solve } from '../../examples/external-typescript/agent.js';
import { startEmbeddedEngine, TINY_ARITH_DIR, type EmbeddedEngine } from '../__fixtures__/embedded-engine.js';
import { expectTitoInvariants, recordingEngine, type EngineExchange } from '../__fixtures__/tito-invariants.js';
import { ArithOptions, generateArith } from '../datasets/arith.js';
import type { Engine } from '../engines/types.js';
import { ProviderError } from '../errors/index.js';
import { loadModelTokenizer, type ModelTokenizer } from '../tokens/model-tokenizer.js';
import { hermesParser } from '../tokens/tool-calls/hermes.js';
import { externalEpisodeResult } from './external-episode.js';
import type { GatewayEpisodeOptions } from './gateway-episode.js';
import { startGateway, type Gateway } from './server.js';
import { ADD_TOOL } from '../__fixtures__/openai-tools.js';

// The official `openai` client against the gateway in front of the real embedded engine (the trainer
// serving the warm-started models/tiny-arith, which writes Hermes calculator calls on arith prompts).
// Every engine call is recorded, so the trajectory can be checked against what the engine really got.
const tasks = generateArith('test', ArithOptions.parse({ max_digits: 2, test_size: 6 }));
let embedded: EmbeddedEngine;
let tokenizer: ModelTokenizer;
let gateway: Gateway;
let opened = 0;

beforeAll(async () => {
  [embedded, tokenizer] = await Promise.all([startEmbeddedEngine('pretrained'), loadModelTokenizer(TINY_ARITH_DIR)]);
  gateway = await startGateway({ modelName: () => 'policy' });
}, 120_000);
afterAll(async () => {
  await gateway?.stop();
  await embedded?.stop();
});

/** Opens an episode whose engine calls are recorded; returns an openai client pointed at it. */
function episode(overrides: Partial<GatewayEpisodeOptions> = {}): {
  client: OpenAI;
  endpoint: ReturnType<Gateway['open']>;
  exchanges: EngineExchange[];
} {
  const recorded = recordingEngine(embedded.engine);
  const endpoint = gateway.open(`test-${++opened}`, {
    engine: recorded.engine,
    tokenizer,
    parser: hermesParser,
    policyVersion: 3,
    maxTurns: 6,
    maxNewTokens: 32,
    sampling: { temperature: 0, topP: 1, topK: -1 },
    ...overrides,
  });
  return {
    client: new OpenAI({ baseURL: endpoint.baseUrl, apiKey: endpoint.apiKey, maxRetries: 0 }),
    endpoint,
    exchanges: recorded.exchanges,
  };
}

const noOutcome = { timedOut: false, log: '' };

describe('gateway with the openai client', () => {
  test('returns calculator tool calls and answers, streamed and not, to concurrent episodes whose trajectories are exactly the engine tokens', async () => {
    const runs = tasks.map((task, i) => ({ task, stream: i % 2 === 1, ...episode() }));
    const answers = await Promise.all(runs.map((r) => solve(r.client, r.task, { stream: r.stream })));
    let withTool = 0;
    for (const [i, run] of runs.entries()) {
      const result = externalEpisodeResult(run.endpoint.episode, noOutcome, undefined, 0);
      expect(result.error).toBeUndefined();
      expectTitoInvariants(result, run.exchanges);
      expect(result.trajectory.segments.filter((s) => s.source === 'model').every((s) => s.policyVersion === 3)).toBe(
        true,
      );
      if (result.toolCalls.length === 0) continue;
      withTool++;
      expect(result.trajectory.segments.map((s) => s.source).slice(0, 3)).toStrictEqual(['prompt', 'model', 'tool']);
      expect(answers[i]!.messages[1]).toMatchObject({
        role: 'assistant',
        tool_calls: [{ type: 'function', function: { name: 'calculator' } }],
      });
      expect(result.finalText).toBe(answers[i]!.answer);
    }
    expect(withTool).toBeGreaterThan(2);
    // Streamed and plain replies of the same greedy prompt are the same tokens.
    const again = episode();
    await solve(again.client, runs[1]!.task, { stream: false });
    expect(again.exchanges.map((x) => x.tokenIds)).toStrictEqual(runs[1]!.exchanges.map((x) => x.tokenIds));
  });

  test("returns OpenAI-shaped usage, finish reasons, ids and logprobs equal to the engine's", async () => {
    const { client, endpoint, exchanges } = episode();
    const completion = await client.chat.completions.create({
      model: 'policy',
      messages: [{ role: 'user', content: tasks[0]!.prompt }],
      tools: [calculator],
      logprobs: true,
    });
    const choice = completion.choices[0]!;
    expect(completion).toMatchObject({
      object: 'chat.completion',
      model: 'policy',
      usage: { prompt_tokens: exchanges[0]!.promptIds.length, completion_tokens: exchanges[0]!.tokenIds.length },
    });
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.tool_calls?.[0]?.id).toMatch(/^call_/);
    expect(choice.logprobs?.content?.map((t) => t.logprob)).toStrictEqual(exchanges[0]!.logprobs);
    expect(choice.logprobs?.content?.map((t) => t.token).join('')).toBe(tokenizer.decode(exchanges[0]!.tokenIds));
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toStrictEqual(['policy']);
    expect(endpoint.episode.modelCalls).toBe(1);
  });

  test("returns the engine's k most likely tokens per position for top_logprobs, streamed and not", async () => {
    const { client, exchanges } = episode();
    const request = {
      model: 'policy',
      messages: [{ role: 'user' as const, content: tasks[1]!.prompt }],
      tools: [calculator],
      logprobs: true,
      top_logprobs: 3,
    };
    const plain = (await client.chat.completions.create(request)).choices[0]!.logprobs!.content!;
    expect(plain.map((t) => t.logprob)).toStrictEqual(exchanges[0]!.logprobs);
    for (const token of plain) {
      expect(token.top_logprobs).toHaveLength(3);
      const lps = token.top_logprobs.map((t) => t.logprob);
      expect(lps).toStrictEqual([...lps].sort((a, b) => b - a));
      expect(new Set(token.top_logprobs.map((t) => t.token)).size).toBe(3);
      // Greedy sampling: the sampled token is the most likely one, with the same logprob.
      expect(token.top_logprobs[0]).toStrictEqual({ token: token.token, logprob: token.logprob, bytes: token.bytes });
      expect(lps[2]!).toBeLessThan(lps[0]!);
    }
    const streamed: (typeof plain)[number][] = [];
    for await (const chunk of await client.chat.completions.create({ ...request, stream: true }))
      streamed.push(...(chunk.choices[0]?.logprobs?.content ?? []));
    expect(streamed.map((t) => t.top_logprobs)).toStrictEqual(plain.map((t) => t.top_logprobs));
    const refused = await client.chat.completions.create({ ...request, logprobs: false }).then(
      () => undefined,
      (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
    );
    expect([refused?.status, refused?.message]).toStrictEqual([400, expect.stringContaining('top_logprobs')]);
  });

  test('streams the role chunk while the engine is still generating, the rest after it, and an engine failure as an error the iterator raises', async () => {
    // The engine is held until the test lets it go, so "before the completion ends" is an order of events, not a timing.
    let release: (fail?: Error) => void = () => undefined;
    const held: Engine = Object.create(embedded.engine) as Engine;
    const events: string[] = [];
    (held as { generate: Engine['generate'] }).generate = async (...args) => {
      events.push('engine asked');
      // Were the role chunk held back until the reply, nothing would release the engine: fail instead of hanging.
      const fail = await new Promise<Error | undefined>((resolve) => {
        const fallback = setTimeout(() => {
          events.push('released without a first chunk');
          resolve(undefined);
        }, 30_000);
        release = (error) => {
          clearTimeout(fallback);
          resolve(error);
        };
      });
      if (fail) throw fail;
      return embedded.engine.generate(...args);
    };
    const { client } = episode({ engine: held });
    const request = {
      model: 'policy',
      messages: [{ role: 'user' as const, content: tasks[0]!.prompt }],
      tools: [calculator],
      stream: true as const,
    };
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of await client.chat.completions.create(request)) {
      if (chunks.length === 0) {
        events.push(`first chunk: ${chunk.choices[0]?.delta.role}`);
        release();
      }
      chunks.push(chunk);
    }
    expect(events).toStrictEqual(['engine asked', 'first chunk: assistant']);
    expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe('tool_calls');
    expect(chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []).map((c) => c.function?.name)).toStrictEqual([
      'calculator',
    ]);

    const failing = await client.chat.completions.create(request);
    const seen: string[] = [];
    const error = await (async () => {
      for await (const chunk of failing) {
        seen.push(chunk.choices[0]?.delta.role ?? '');
        release(new ProviderError('the engine fell over'));
      }
    })().then(
      () => undefined,
      (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
    );
    expect(seen).toStrictEqual(['assistant']);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error?.message).toContain('the engine failed: the engine fell over');
  });

  test('appends a second user turn after the answer to the same segment', async () => {
    const { client, endpoint, exchanges } = episode();
    const first = await solve(client, tasks[2]!);
    const messages = [...first.messages, { role: 'user' as const, content: 'Now give the answer again.' }];
    const second = await client.chat.completions.create({ model: 'policy', messages, tools: [calculator] });
    const result = externalEpisodeResult(endpoint.episode, noOutcome, undefined, 0);
    expect(endpoint.episode.segments).toHaveLength(1);
    expect(result.trajectory.segments.at(-2)?.source).toBe('user');
    expectTitoInvariants(result, exchanges);
    expect(result.messages.at(-1)).toMatchObject({
      role: 'assistant',
      content: second.choices[0]!.message.content ?? '',
    });
  });

  test('starts a new segment, with its reason, when the agent rewrites its history', async () => {
    const { client, endpoint, exchanges } = episode();
    const first = await solve(client, tasks[3]!);
    // The agent drops the model's call and its result, and asks afresh.
    await client.chat.completions.create({
      model: 'policy',
      messages: [first.messages[0]!, { role: 'user', content: tasks[4]!.prompt }],
      tools: [calculator],
    });
    const segments = endpoint.episode.segments;
    expect(segments.map((s) => s.reason === null)).toStrictEqual([true, false]);
    expect(segments[1]!.reason).toContain('history trimmed');
    const last = exchanges.at(-1)!;
    expect(segments[1]!.trajectory.ids).toStrictEqual([...last.promptIds, ...last.tokenIds]);
    expect(segments[1]!.trajectory.segments[0]!.source).toBe('prompt');
    const before = exchanges.at(-2)!;
    expect(segments[0]!.trajectory.ids).toStrictEqual([...before.promptIds, ...before.tokenIds]);
    // Editing the model's reply is a rewrite too: the model never wrote the edited text.
    const recorded = endpoint.episode.conversation;
    await client.chat.completions.create({
      model: 'policy',
      messages: [
        ...recorded.slice(0, -1).map((m) => ({ role: m.role, content: m.content }) as never),
        { role: 'assistant', content: 'Answer: 7' },
        { role: 'user', content: 'Sure?' },
      ],
      tools: [calculator],
    });
    expect(segments[2]!.reason).toBe("the model's last reply was changed");
    const result = externalEpisodeResult(endpoint.episode, noOutcome, undefined, 0);
    expect([
      result.stats.historyRewrites,
      result.priorSegments?.map((s) => s.endedBecause),
      result.stats.turns,
    ]).toStrictEqual([2, [segments[1]!.reason, segments[2]!.reason], exchanges.length]);
  });

  test('rejects bad requests with OpenAI-shaped 4xx errors the client raises', async () => {
    const { client, endpoint } = episode({ maxTotalTokens: 60 });
    const ask = (extra: Record<string, unknown>, c: OpenAI = client): Promise<unknown> =>
      c.chat.completions.create({
        model: 'policy',
        messages: [{ role: 'user', content: 'What is 2 + 2?' }],
        ...extra,
      } as never);
    const failure = async (work: Promise<unknown>): Promise<{ status: number; code: unknown; message: string }> => {
      const error = (await work.then(
        () => undefined,
        (e: unknown) => e,
      )) as InstanceType<typeof OpenAI.APIError>;
      expect(error).toBeInstanceOf(OpenAI.APIError);
      expect(error.message).not.toContain('\n');
      return { status: error.status as number, code: error.code, message: error.message };
    };
    expect(await failure(ask({ n: 2 }))).toMatchObject({ status: 400, message: expect.stringContaining('only n = 1') });
    expect(
      await failure(
        ask({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:,' } }] }] }),
      ),
    ).toMatchObject({ status: 400, code: 'unsupported_content' });
    expect(await failure(ask({ tool_choice: 'required' }))).toMatchObject({
      status: 400,
      message: expect.stringContaining('tool_choice'),
    });
    expect(await failure(ask({ messages: [{ role: 'user', content: 'x'.repeat(200) }] }))).toMatchObject({
      status: 400,
      code: 'context_length_exceeded',
    });
    const stranger = new OpenAI({
      baseURL: endpoint.baseUrl.replace(/episodes\/[^/]+/, 'episodes/nobody'),
      apiKey: endpoint.apiKey,
      maxRetries: 0,
    });
    expect(await failure(ask({}, stranger))).toMatchObject({ status: 404, code: 'episode_not_found' });
    const wrongKey = new OpenAI({ baseURL: endpoint.baseUrl, apiKey: 'sk-wrong', maxRetries: 0 });
    expect(await failure(ask({}, wrongKey))).toMatchObject({ status: 401, code: 'invalid_api_key' });
    expect(endpoint.episode.modelCalls).toBe(0);
    endpoint.close();
    expect(await failure(ask({}))).toMatchObject({ status: 404, code: 'episode_not_found' });
  });

  test('returns a call of a tool the request did not offer as a tool call, counted as unknown_tool', async () => {
    const { client, endpoint } = episode();
    const add = ADD_TOOL;
    const completion = await client.chat.completions.create({
      model: 'policy',
      messages: [{ role: 'user', content: tasks[0]!.prompt }],
      tools: [add],
    });
    const names = (completion.choices[0]!.message.tool_calls ?? []).map((c) =>
      c.type === 'function' ? c.function.name : c.type,
    );
    // The tiny model was taught the calculator only, and writes it greedily whatever the tool list says.
    expect(names).toStrictEqual(['calculator']);
    expect(endpoint.episode.toolErrorsByKind).toStrictEqual({ unknown_tool: 1 });
  });

  test('returns a malformed tool call as text with finish_reason stop, and counts it', async () => {
    // A stop string cut inside the call's JSON leaves an unterminated call, as a sloppy model writes one.
    const { client, endpoint, exchanges } = episode();
    const completion = await client.chat.completions.create({
      model: 'policy',
      messages: [{ role: 'user', content: tasks[0]!.prompt }],
      tools: [calculator],
      stop: ['"}'],
    });
    const choice = completion.choices[0]!;
    expect([choice.finish_reason, choice.message.tool_calls ?? []]).toStrictEqual(['stop', []]);
    expect(choice.message.content).toMatch(/^<tool_call>/);
    expect(endpoint.episode.toolErrorsByKind).toStrictEqual({ unterminated: 1 });
    const model = endpoint.episode.segments[0]!.trajectory.segments[1]!;
    expect(model.length).toBeLessThan(exchanges[0]!.tokenIds.length);
    expect(
      tokenizer.decode(endpoint.episode.segments[0]!.trajectory.ids.slice(model.start, model.start + model.length)),
    ).toContain('"}');
  });
});
