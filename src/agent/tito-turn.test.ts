import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { doubleLogprob, startEngineDouble, type EngineDouble } from '../__fixtures__/engine-double.js';
import { TINY_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import type { Engine } from '../engines/types.js';
import { createVllmClient } from '../engines/vllm.js';
import { incrementalRenderer } from '../tokens/incremental-render.js';
import { loadModelTokenizer, type ModelTokenizer } from '../tokens/model-tokenizer.js';
import { hermesParser } from '../tokens/tool-calls/hermes.js';
import { TokenTrajectory } from '../tokens/trajectory.js';
import { EpisodeFailure } from './episode-failure.js';
import { type TitoTurnContext, type TitoTurnRequest, titoTurn } from './tito-turn.js';

// The one token-in/token-out turn both the built-in agent and the gateway run, against the engine double
// speaking vLLM's protocol: what it sends, what it records, and what it leaves alone when it cannot go on.
let double: EngineDouble;
let tokenizer: ModelTokenizer;
let reply: number[];

beforeAll(async () => {
  tokenizer = await loadModelTokenizer(TINY_TOKENIZER_DIR);
  reply = tokenizer.encode('Answer: 4. Done<|im_end|>');
  double = await startEngineDouble({ script: () => ({ tokenIds: reply }) });
});
afterAll(() => double?.close());

function context(engine: Engine = createVllmClient({ baseUrl: double.url, model: 'policy' })): TitoTurnContext {
  const renderer = incrementalRenderer(tokenizer);
  return {
    engine,
    tokenizer,
    renderer,
    parser: hermesParser,
    policyVersion: () => 3,
    tally: { engineMs: 0, promptTokens: 0, generatedTokens: 0 },
  };
}

function request(trajectory: TokenTrajectory, overrides: Partial<TitoTurnRequest> = {}): TitoTurnRequest {
  return {
    trajectory,
    fresh: trajectory.length === 0,
    messages: [{ role: 'user', content: 'What is 2 + 2?' }],
    tools: [],
    turn: trajectory.counters.turns,
    sampling: { temperature: 1, topP: 1, topK: -1 },
    maxNewTokens: 64,
    ...overrides,
  };
}

describe('titoTurn', () => {
  test('returns the engine tokens appended after the rendered prompt, then only the new messages on the next turn', async () => {
    const ctx = context();
    const trajectory = new TokenTrajectory();
    const first = await titoTurn(ctx, request(trajectory));
    const prompt = incrementalRenderer(tokenizer).initial([{ role: 'user', content: 'What is 2 + 2?' }], []);
    expect(trajectory.ids).toStrictEqual([...prompt, ...reply]);
    expect(trajectory.modelLogprobs).toStrictEqual(reply.map(doubleLogprob));
    expect(first).toMatchObject({ status: 'generated', text: 'Answer: 4. Done', policyVersion: 3 });
    expect(first).toMatchObject({ promptLength: prompt.length, finishReason: 'stop' });

    const before = trajectory.length;
    await titoTurn(ctx, request(trajectory, { messages: [{ role: 'user', content: 'And 3 + 3?' }] }));
    // The second request is the first one's exact ids, the model's included, plus the continuation.
    const continuation = incrementalRenderer(tokenizer).continuation(reply.at(-1), [
      { role: 'user', content: 'And 3 + 3?' },
    ]);
    expect(double.requests.at(-1)!.promptIds).toStrictEqual([...trajectory.ids.slice(0, before), ...continuation]);
    expect(trajectory.segments.map((s) => [s.source, s.turn, s.policyVersion])).toStrictEqual([
      ['prompt', 0, undefined],
      ['model', 0, 3],
      ['user', 1, undefined],
      ['model', 1, 3],
    ]);
    expect(ctx.tally).toMatchObject({
      promptTokens: prompt.length + continuation.length,
      generatedTokens: 2 * reply.length,
    });
    expect(trajectory.counters.turns).toBe(2);
  });

  test('returns the version the engine reply carries over the clock (a worker request relayed by the run thread)', async () => {
    const vllm = createVllmClient({ baseUrl: double.url, model: 'policy' });
    const relayed: Engine = {
      ...vllm,
      generate: async (ids, params, signal) => ({ ...(await vllm.generate(ids, params, signal)), policyVersion: 7 }),
    };
    const trajectory = new TokenTrajectory();
    const result = await titoTurn(context(relayed), request(trajectory));
    expect(result).toMatchObject({ status: 'generated', policyVersion: 7 });
    expect(trajectory.segments[1]!.policyVersion).toBe(7);
  });

  test('returns overBudget with nothing asked or recorded when the prompt leaves no room', async () => {
    const trajectory = new TokenTrajectory();
    const sent = double.requests.length;
    const result = await titoTurn(context(), request(trajectory, { maxTotalTokens: 5 }));
    expect(result.status).toBe('overBudget');
    expect(trajectory.length).toBe(0);
    expect(double.requests.length).toBe(sent);
  });

  test('caps the reply at the room left under maxTotalTokens', async () => {
    const trajectory = new TokenTrajectory();
    const prompt = incrementalRenderer(tokenizer).initial([{ role: 'user', content: 'What is 2 + 2?' }], []);
    const result = await titoTurn(context(), request(trajectory, { maxTotalTokens: prompt.length + 3 }));
    expect(double.requests.at(-1)!.maxTokens).toBe(3);
    expect(result).toMatchObject({ status: 'generated', finishReason: 'length' });
    expect(trajectory.ids).toStrictEqual([...prompt, ...reply.slice(0, 3)]);
    expect(trajectory.counters.truncations).toBe(1);
  });

  test('rejects what accept throws, leaving the trajectory as it was', async () => {
    const trajectory = new TokenTrajectory();
    const refused = titoTurn(
      context(),
      request(trajectory, {
        accept: () => {
          throw new Error('not in the shape asked for');
        },
      }),
    );
    await expect(refused).rejects.toThrow('not in the shape asked for');
    expect(trajectory.length).toBe(0);
  });

  test('rejects a conversation the template refuses as a template failure, asking nothing', async () => {
    const trajectory = new TokenTrajectory();
    const refusing = {
      initial: () => {
        throw new Error('tool messages are not supported');
      },
      continuation: () => [],
    };
    const sent = double.requests.length;
    const turn = titoTurn({ ...context(), renderer: refusing }, request(trajectory));
    const error = await turn.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EpisodeFailure);
    expect((error as EpisodeFailure).kind).toBe('template');
    expect([trajectory.length, double.requests.length]).toStrictEqual([0, sent]);
  });

  test('returns the reply cut after the token completing a stop string, its text before it', async () => {
    const trajectory = new TokenTrajectory();
    const result = await titoTurn(context(), request(trajectory, { stop: ['. Done'] }));
    expect(result).toMatchObject({ status: 'generated', text: 'Answer: 4', finishReason: 'stop' });
    const kept = trajectory.segments[1]!.length;
    expect(tokenizer.decode(reply.slice(0, kept))).toContain('. Done');
    expect(tokenizer.decode(reply.slice(0, kept - 1))).not.toContain('. Done');
  });
});
