import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, test } from 'vitest';
import { firstSampleRequest } from '../__fixtures__/episode-request.js';
import { startEngineDouble, type EngineDouble, type ReplyScript } from '../__fixtures__/engine-double.js';
import { datasetContext } from '../datasets/context.js';
import { datasets } from '../datasets/index.js';
import type { Task } from '../datasets/types.js';
import { TAU2_TERMINATION_KEY } from '../domains/tau2/index.js';
import { createVllmClient } from '../engines/index.js';
import { RecipeSchema, type RecipeInput } from '../recipe/schema.js';
import { loadModelTokenizer, type ModelTokenizer } from '../tokens/index.js';
import type { EpisodeEnv } from '../tools/types.js';
import { projectRoot } from '../util/paths.js';
import { collectRollout, type EpisodeKit, type Rollout } from './collect.js';
import { buildEpisodeKit } from '../run/kit.js';

const MODEL_DIR = join(projectRoot(), 'models', 'tiny-arith');
const TAU2 = { domain: 'retail', release: '2025-06-10' };
// Retail task 88 of the 2025-06-10 release: one write (cancel #W8835847, "ordered by mistake"), nothing to communicate.
const CANCEL =
  '<tool_call>\n{"name": "cancel_pending_order", "arguments": {"order_id": "#W8835847", "reason": "ordered by mistake"}}\n</tool_call><|im_end|>';
const LOOKUP =
  '<tool_call>\n{"name": "get_order_details", "arguments": {"order_id": "#W8835847"}}\n</tool_call><|im_end|>';

let tokenizer: ModelTokenizer;
let task: Task;
let double: EngineDouble | undefined;
beforeAll(async () => {
  tokenizer = await loadModelTokenizer(MODEL_DIR);
  const recipe = RecipeSchema.parse(recipeInput({ kind: 'scripted', messages: [] }));
  task = (await (await datasets.get('tau2')).load('base', datasetContext(recipe, projectRoot()))).find(
    (t) => t.id === 'retail-88',
  )!;
});
afterEach(async () => {
  await double?.close();
  double = undefined;
});

function recipeInput(user: NonNullable<RecipeInput['user']>): RecipeInput {
  return {
    name: 'tau2-user-test',
    model: { path: MODEL_DIR },
    dataset: { name: 'tau2', options: TAU2 },
    tools: [{ name: 'tau2', options: TAU2 }],
    agent: { system_prompt: 'You are a retail agent.', max_turns: 8, max_new_tokens: 256 },
    user,
    reward: { name: 'tau2', options: { ...TAU2, basis: 'judge_free' } },
  };
}

/** The policy's replies in order (the user model, when it shares the engine, is answered by `userReply`). */
async function policy(turns: readonly string[], userReply?: (prompt: string) => string): Promise<EngineDouble> {
  let policyCalls = 0;
  const script: ReplyScript = (request) => {
    const prompt = tokenizer.decode(request.promptIds);
    if (userReply && prompt.includes('<scenario>'))
      return { tokenIds: tokenizer.encode(`${userReply(prompt)}<|im_end|>`) };
    return { tokenIds: tokenizer.encode(turns[Math.min(policyCalls++, turns.length - 1)]!) };
  };
  double = await startEngineDouble({ script, models: ['policy', MODEL_DIR] });
  return double;
}

/** Builds the kit from a recipe and runs one episode; returns the rollout and the episode's env. */
async function run(
  user: NonNullable<RecipeInput['user']>,
  d: EngineDouble,
): Promise<{ rollout: Rollout; env: EpisodeEnv; kit: EpisodeKit }> {
  const recipe = RecipeSchema.parse(recipeInput(user));
  const kit = await buildEpisodeKit({
    recipe,
    recipeDir: projectRoot(),
    recipeFile: 'test.yaml',
    dataset: await datasets.get('tau2'),
    engine: createVllmClient({ baseUrl: d.url, model: 'policy' }),
    tokenizer,
    warn: () => undefined,
  });
  let env: EpisodeEnv | undefined;
  const watched: EpisodeKit = {
    ...kit,
    user: (t, e) => {
      env = e;
      return kit.user!(t, e);
    },
  };
  try {
    const rollout = await collectRollout(watched, firstSampleRequest(task));
    return { rollout, env: env!, kit };
  } finally {
    await kit.close?.();
  }
}

/** Segment sources with their mask value, and the decoded text of each segment. */
function segments(rollout: Rollout): [string, number, string][] {
  const t = rollout.episode.trajectory;
  const mask = t.mask();
  return t.segments.map((s) => [s.source, mask[s.start]!, tokenizer.decode(t.ids.slice(s.start, s.start + s.length))]);
}

describe('startUserSimulation', () => {
  test('returns an episode that opens with the greeting, takes scripted user turns as mask-0 tokens, and ends on the stop with the termination key set', async () => {
    const d = await policy(['Shall I cancel order #W8835847?<|im_end|>', CANCEL, 'It is cancelled.<|im_end|>']);
    const { rollout, env } = await run(
      { kind: 'scripted', messages: ['Cancel order #W8835847 please, I ordered it by mistake.', 'Yes.'] },
      d,
    );
    const segs = segments(rollout);
    expect(segs.map(([source, mask]) => [source, mask])).toStrictEqual([
      ['prompt', 0],
      ['model', 1],
      ['user', 0],
      ['model', 1],
      ['tool', 0],
      ['model', 1],
    ]);
    // The greeting is an assistant turn inside the first prompt: environment tokens, never trained on.
    expect(
      segs[0]![2].endsWith(
        '<|im_start|>assistant\nHi! How can I help you today?<|im_end|>\n<|im_start|>user\nCancel order #W8835847 please, I ordered it by mistake.<|im_end|>\n<|im_start|>assistant\n',
      ),
    ).toBe(true);
    expect(segs[2]![2]).toBe('\n<|im_start|>user\nYes.<|im_end|>\n<|im_start|>assistant\n');
    // Every mask-1 token is exactly what the engine generated.
    const mask = rollout.episode.trajectory.mask();
    expect(rollout.episode.trajectory.ids.filter((_, i) => mask[i] === 1)).toStrictEqual(
      d.requests.flatMap((r) => r.outputs[0] ?? []),
    );
    expect(rollout.episode.messages.slice(1, 3)).toStrictEqual([
      { role: 'assistant', content: [{ text: 'Hi! How can I help you today?' }] },
      { role: 'user', content: [{ text: 'Cancel order #W8835847 please, I ordered it by mistake.' }] },
    ]);
    expect([
      rollout.episode.finishReason,
      env.state.get(TAU2_TERMINATION_KEY),
      rollout.reward,
      rollout.parts,
    ]).toStrictEqual(['userStop', 'user_stop', 1, { DB: 1, COMMUNICATE: 1 }]);
  });

  test('returns reward 0 with max_steps recorded when the conversation reaches user.max_steps inside a tool loop', async () => {
    const d = await policy([LOOKUP, CANCEL, 'Done.<|im_end|>']);
    const { rollout, env } = await run({ kind: 'scripted', messages: ['Cancel #W8835847.'], max_steps: 4 }, d);
    // user (1), lookup call (2), its result (3), cancel call (4): the limit ends it after that tool batch.
    expect([
      rollout.episode.finishReason,
      env.state.get(TAU2_TERMINATION_KEY),
      rollout.reward,
      rollout.episode.stats.turns,
      d.requests.length,
    ]).toStrictEqual(['maxSteps', 'max_steps', 0, 2, 2]);
    expect(rollout.rewardInfo).toMatchObject({ note: 'episode ended without a stop token: max_steps' });
    expect(segments(rollout).at(-1)![0]).toBe('model');
  });

  test('returns reward 0 with too_many_errors recorded when tool errors reach user.max_errors', async () => {
    const d = await policy(['<tool_call>\n{"name": "refund_everything", "arguments": {}}\n</tool_call><|im_end|>']);
    const { rollout, env } = await run({ kind: 'scripted', messages: ['Cancel #W8835847.'], max_errors: 2 }, d);
    expect([
      rollout.episode.finishReason,
      env.state.get(TAU2_TERMINATION_KEY),
      rollout.reward,
      rollout.episode.stats.toolErrors,
    ]).toStrictEqual(['maxToolErrors', 'too_many_errors', 0, 2]);
  });

  test('returns agent_stop when the agent ends the conversation with a stop token', async () => {
    const d = await policy([CANCEL, 'Cancelled. ###STOP###<|im_end|>']);
    const { rollout, env } = await run(
      { kind: 'scripted', messages: ['Cancel #W8835847, ordered by mistake.', 'never sent'] },
      d,
    );
    expect([rollout.episode.finishReason, env.state.get(TAU2_TERMINATION_KEY), rollout.reward]).toStrictEqual([
      'userStop',
      'agent_stop',
      1,
    ]);
  });

  test('returns user turns written by the policy engine playing the user from the task scenario', async () => {
    const said: string[] = [];
    const d = await policy(['Which order?<|im_end|>', CANCEL, 'Done.<|im_end|>'], (prompt) => {
      said.push(prompt);
      return ['Cancel #W8835847, ordered by mistake.', 'It is #W8835847.', '###STOP###'][said.length - 1]!;
    });
    const { rollout, env } = await run({ kind: 'policy' }, d);
    // The user model sees its scenario as system prompt and the agent's lines as user turns (roles flipped).
    expect(
      said[0]!.startsWith(
        `<|im_start|>system\n${task.data.user_system_prompt as string}<|im_end|>\n<|im_start|>user\nHi! How can I help you today?<|im_end|>\n<|im_start|>assistant\n`,
      ),
    ).toBe(true);
    expect(
      said[1]!.endsWith(
        '<|im_start|>assistant\nCancel #W8835847, ordered by mistake.<|im_end|>\n<|im_start|>user\nWhich order?<|im_end|>\n<|im_start|>assistant\n',
      ),
    ).toBe(true);
    expect([
      said.length,
      segments(rollout).map(([s]) => s),
      env.state.get(TAU2_TERMINATION_KEY),
      rollout.reward,
    ]).toStrictEqual([3, ['prompt', 'model', 'user', 'model', 'tool', 'model'], 'user_stop', 1]);
  });

  test('returns user turns from a second engine attached by URL, with its own tokenizer and served model name', async () => {
    const userDouble = await startEngineDouble({
      script: () => ({ tokenIds: tokenizer.encode('###STOP###<|im_end|>') }),
      models: [MODEL_DIR],
    });
    try {
      const d = await policy(['Hello.<|im_end|>']);
      const { rollout } = await run(
        { kind: 'engine', model: MODEL_DIR, engine: { kind: 'url', url: userDouble.url } },
        d,
      );
      expect([
        userDouble.requests.length,
        userDouble.requests[0]!.model,
        rollout.episode.finishReason,
        rollout.episode.stats.turns,
      ]).toStrictEqual([1, MODEL_DIR, 'userStop', 0]);
    } finally {
      await userDouble.close();
    }
  });

  test('returns user turns from an OpenAI-compatible chat URL', async () => {
    const bodies: { model: string; messages: { role: string; content: string }[] }[] = [];
    const server = createServer((req, res) => {
      let raw = '';
      req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
      req.on('end', () => {
        bodies.push(JSON.parse(raw) as (typeof bodies)[number]);
        const content = bodies.length === 1 ? 'Cancel #W8835847, ordered by mistake.' : 'Thanks. ###STOP###';
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ choices: [{ message: { role: 'assistant', content } }] }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const d = await policy([CANCEL, 'Cancelled.<|im_end|>']);
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
      const { rollout, env } = await run({ kind: 'url', url, model: 'user-model' }, d);
      expect(bodies[1]!.messages.map((m) => m.role)).toStrictEqual(['system', 'user', 'assistant', 'user']);
      expect([
        bodies[1]!.model,
        bodies[1]!.messages.at(-1)!.content,
        env.state.get(TAU2_TERMINATION_KEY),
        rollout.reward,
      ]).toStrictEqual(['user-model', 'Cancelled.', 'user_stop', 1]);
    } finally {
      server.close();
    }
  });

  test('rejects a model-played user for a task without a user system prompt', async () => {
    const d = await policy(['Hi.<|im_end|>']);
    const recipe = RecipeSchema.parse(recipeInput({ kind: 'policy' }));
    const kit = await buildEpisodeKit({
      recipe,
      recipeDir: projectRoot(),
      recipeFile: 'test.yaml',
      dataset: { name: 'plain', load: () => Promise.resolve([]) },
      engine: createVllmClient({ baseUrl: d.url, model: 'policy' }),
      tokenizer,
      warn: () => undefined,
    });
    const env = {
      episodeId: '0-0',
      task: { id: 'p1', prompt: 'hi', data: {} },
      state: new Map<string, unknown>(),
      signal: new AbortController().signal,
    };
    expect(() => kit.user!(env.task, env)).toThrow('task p1: no system prompt for the simulated user');
    await kit.close?.();
  });
});
