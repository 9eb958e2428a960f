import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { firstSampleRequest } from '../__fixtures__/episode-request.js';
import { datasets } from '../datasets/index.js';
import { startEngineDouble, type EngineDouble } from '../__fixtures__/engine-double.js';
import { perfectToolCalls } from '../__fixtures__/tau2-perfect.js';
import type { Task } from '../datasets/types.js';
import { createVllmClient } from '../engines/index.js';
import { ConfigError, ProviderError } from '../errors/index.js';
import { RecipeSchema } from '../recipe/schema.js';
import { collectRollout } from '../rollout/collect.js';
import { buildEpisodeKit } from '../run/kit.js';
import { loadModelTokenizer } from '../tokens/index.js';
import { tools } from '../tools/index.js';
import type { EpisodeEnv } from '../tools/types.js';
import { dataDir, projectRoot } from '../util/paths.js';
import { rewards } from './index.js';

/** A perfect episode through the registered dataset, tools and reward, in Strands message JSON. */
async function perfectEpisode(task: Task, finalUserText: string) {
  const makeTools = await (await tools.get('tau2')).create({ domain: 'retail' }, { recipeDir: '.', warn: () => {} });
  const env: EpisodeEnv = { episodeId: 'e', task, state: new Map(), signal: new AbortController().signal };
  const { toolCalls, communicateInfo } = await perfectToolCalls(task, makeTools(env));
  const messages = [
    { role: 'assistant', content: [{ text: task.data.greeting }] },
    { role: 'user', content: [{ text: 'Hello' }] },
    {
      role: 'assistant',
      content: [
        { text: `<tool_call>{"name": "x"}</tool_call>` },
        { toolUse: { name: 'x', toolUseId: '1', input: {} } },
      ],
    },
    { role: 'user', content: [{ toolResult: { toolUseId: '1', status: 'success', content: [{ text: 'ok' }] } }] },
    { role: 'assistant', content: [{ text: `Done: ${communicateInfo.join(', ')}` }] },
    { role: 'user', content: [{ text: finalUserText }] },
  ];
  return { task, finalText: '', messages, toolCalls, finishReason: 'endTurn', env };
}

describe('tau2Reward', () => {
  test('returns 1 with its parts for a perfect retail episode and warns once that NL_ASSERTION was dropped', async () => {
    const [task] = await (await datasets.get('tau2')).load('test', {
      recipeDir: '.',
      dataDir: dataDir(),
      seed: 0,
      options: { domain: 'retail' },
    });
    expect(task!.prompt).toBe('');
    expect(String(task!.data.system_prompt)).toContain('<policy>');
    const warnings: string[] = [];
    const reward = await (await rewards.get('tau2')).create(
      { domain: 'retail' },
      { recipeDir: '.', warn: (m) => warnings.push(m) },
    );
    const first = await reward(await perfectEpisode(task!, 'Great, thanks! ###STOP###'));
    await reward(await perfectEpisode(task!, 'Great, thanks! ###STOP###'));
    expect(first).toMatchObject({ score: 1, parts: { DB: 1 } });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('NL_ASSERTION');
  });

  test('returns 0 when the episode ended without a stop token', async () => {
    const [task] = await (await datasets.get('tau2')).load('test', {
      recipeDir: '.',
      dataDir: dataDir(),
      seed: 0,
      options: { domain: 'retail' },
    });
    const reward = await (await rewards.get('tau2')).create(
      { domain: 'retail', basis: 'judge_free' },
      { recipeDir: '.', warn: () => {} },
    );
    expect(await reward(await perfectEpisode(task!, 'Great, thanks!'))).toMatchObject({ score: 0, parts: {} });
  });

  test('rejects an unknown domain with the option path', async () => {
    await expect(
      (await rewards.get('tau2')).create({ domain: 'telecom' }, { recipeDir: '.', warn: () => {} }),
    ).rejects.toThrow(/reward\.options\.domain/);
  });
});

// The NL_ASSERTION judge is an LLM on an OpenAI-compatible chat server. No real LLM can run in the
// tests, so the engine double answers /v1/chat/completions as a deterministic judge: the judge
// model 'all-met' meets every assertion it is asked about, 'last-unmet' fails the last one and
// 'rambler' answers prose. Its /v1/completions serves the policy in the end-to-end episode.
const judgeRequests: { model: string; messages: { role: string; content: string }[]; max_tokens: number }[] = [];
let double: EngineDouble;
let judgeUrl = '';
let closedUrl = '';
let retail: Task[];
beforeAll(async () => {
  const tokenizer = await loadModelTokenizer(join(projectRoot(), 'models', 'tiny-arith'));
  double = await startEngineDouble({
    script: () => ({
      tokenIds: tokenizer.encode('The two t-shirts are made of polyester and cotton. ###STOP###<|im_end|>'),
    }),
    routes: (method, url, body) => {
      if (method !== 'POST' || url !== '/v1/chat/completions') return undefined;
      const request = body as unknown as (typeof judgeRequests)[number];
      judgeRequests.push(request);
      const asked = request.messages[1]!.content.split('expectedOutcomes:\n')[1]!.split('\n');
      const results = asked.map((line, i) => ({
        expectedOutcome: line.replace(/^\d+\. /, ''),
        reasoning: `checked ${i + 1}`,
        metExpectation: request.model === 'all-met' || i < asked.length - 1,
      }));
      const content =
        request.model === 'rambler' ? 'The agent did fine.' : `\`\`\`json\n${JSON.stringify({ results })}\n\`\`\``;
      return { status: 200, body: { choices: [{ message: { role: 'assistant', content } }] } };
    },
  });
  judgeUrl = `${double.url}/v1`;
  // A port nothing listens on: bind an ephemeral one, then release it.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  closedUrl = `http://127.0.0.1:${(probe.address() as { port: number }).port}/v1`;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  retail = await (await datasets.get('tau2')).load('base', {
    recipeDir: '.',
    dataDir: dataDir(),
    seed: 0,
    options: { domain: 'retail' },
  });
});
afterAll(() => double.close());

const byId = (id: string): Task => retail.find((t) => t.id === id)!;

describe('tau2Reward with an NL_ASSERTION judge', () => {
  test('returns 1 with NL_ASSERTION in the basis when the judge meets every assertion, from one request carrying the conversation and the assertions', async () => {
    const warnings: string[] = [];
    const reward = await (await rewards.get('tau2')).create(
      { domain: 'retail', judge: { url: judgeUrl, model: 'all-met' } },
      { recipeDir: '.', warn: (m) => warnings.push(m) },
    );
    // Retail task 19: basis [DB, NL_ASSERTION] with two assertions.
    const result = await reward(await perfectEpisode(byId('retail-19'), 'Thanks! ###STOP###'));
    expect(result).toMatchObject({
      score: 1,
      parts: { DB: 1, NL_ASSERTION: 1 },
      info: {
        basis: ['DB', 'NL_ASSERTION'],
        nl_verdicts: [
          {
            assertion: 'Agent should tell the user that returning the water bottle gives a refund of $54.04.',
            met: true,
            reasoning: 'checked 1',
          },
          {
            assertion: 'Agent should tell the user that exchanging the pet bed and office chair saves $41.64 total.',
            met: true,
            reasoning: 'checked 2',
          },
        ],
      },
    });
    expect(warnings).toStrictEqual([]);
    const request = judgeRequests.at(-1)!;
    expect([request.model, request.max_tokens, request.messages.map((m) => m.role)]).toStrictEqual([
      'all-met',
      1024,
      ['system', 'user'],
    ]);
    expect(request.messages[0]!.content).toContain('"metExpectation"');
    expect(request.messages[1]!.content).toBe(
      'conversation:\nassistant: Hi! How can I help you today?\nuser: Hello\ntool: ok\nassistant: Done: 54.04, 41.64\nuser: Thanks! ###STOP###\n\n' +
        'expectedOutcomes:\n1. Agent should tell the user that returning the water bottle gives a refund of $54.04.\n2. Agent should tell the user that exchanging the pet bed and office chair saves $41.64 total.',
    );
  });

  test('returns 0 when the judge finds one assertion unmet, and asks nothing for a task without assertions', async () => {
    const reward = await (await rewards.get('tau2')).create(
      { domain: 'retail', judge: { url: judgeUrl, model: 'last-unmet' } },
      { recipeDir: '.', warn: () => {} },
    );
    const result = await reward(await perfectEpisode(byId('retail-19'), 'Thanks! ###STOP###'));
    expect(result).toMatchObject({
      score: 0,
      parts: { DB: 1, NL_ASSERTION: 0 },
      info: { nl_verdicts: [{ met: true }, { met: false }] },
    });
    // Task 0: basis [DB, NL_ASSERTION] but no assertions; the reference scores the part 1 without a judge call.
    const asked = judgeRequests.length;
    expect(await reward(await perfectEpisode(byId('retail-0'), 'Thanks! ###STOP###'))).toMatchObject({
      score: 1,
      parts: { DB: 1, NL_ASSERTION: 1 },
    });
    expect(judgeRequests.length).toBe(asked);
  });

  test('rejects an episode whose judge is unreachable or answers without verdicts, naming the judge', async () => {
    const down = await (await rewards.get('tau2')).create(
      { domain: 'retail', judge: { url: closedUrl, model: 'all-met', timeout_s: 5 } },
      { recipeDir: '.', warn: () => {} },
    );
    const unreachable = down(await perfectEpisode(byId('retail-19'), 'Thanks! ###STOP###'));
    await expect(unreachable).rejects.toBeInstanceOf(ProviderError);
    await expect(unreachable).rejects.toThrow(`judge at ${closedUrl}/chat/completions unreachable`);
    const rambler = await (await rewards.get('tau2')).create(
      { domain: 'retail', judge: { url: judgeUrl, model: 'rambler' } },
      { recipeDir: '.', warn: () => {} },
    );
    await expect(rambler(await perfectEpisode(byId('retail-19'), 'Thanks! ###STOP###'))).rejects.toThrow(
      'NL_ASSERTION judge reply is not {"results": [...]}: "The agent did fine."',
    );
  });

  test('rejects bad judge options at their recipe path', async () => {
    const create = async (judge: unknown) =>
      (await rewards.get('tau2')).create({ domain: 'retail', judge }, { recipeDir: '.', warn: () => {} });
    await expect(create({ url: 'not a url', model: 'm' })).rejects.toThrow(/reward\.options\.judge\.url/);
    await expect(create({ url: judgeUrl })).rejects.toThrow(/reward\.options\.judge\.model/);
    await expect(create({ url: judgeUrl, model: 'm', rubric: 'x' })).rejects.toBeInstanceOf(ConfigError);
    await expect(create('http://judge')).rejects.toThrow(/reward\.options\.judge: /);
    delete process.env.ATK_TEST_TAU2_JUDGE_KEY;
    await expect(create({ url: judgeUrl, model: 'm', api_key_env: 'ATK_TEST_TAU2_JUDGE_KEY' })).rejects.toThrow(
      'environment variable ATK_TEST_TAU2_JUDGE_KEY is not set',
    );
  });

  test('returns a failed rollout recording the reason, not a crash, when the judge is unreachable during a real episode', async () => {
    const tokenizer = await loadModelTokenizer(join(projectRoot(), 'models', 'tiny-arith'));
    const episode = async (judge: { url: string; model: string }) => {
      const options = { domain: 'retail' };
      const recipe = RecipeSchema.parse({
        name: 'tau2-judge-test',
        model: { path: join(projectRoot(), 'models', 'tiny-arith') },
        dataset: { name: 'tau2', options },
        tools: [{ name: 'tau2', options }],
        agent: { system_prompt: 'You are a retail agent.', max_turns: 4, max_new_tokens: 64 },
        user: { kind: 'scripted', messages: ['What are the two t-shirts made of?'] },
        reward: { name: 'tau2', options: { ...options, judge } },
      });
      const kit = await buildEpisodeKit({
        recipe,
        recipeDir: projectRoot(),
        recipeFile: 'test.yaml',
        dataset: await datasets.get('tau2'),
        engine: createVllmClient({ baseUrl: double.url, model: 'policy' }),
        tokenizer,
        warn: () => undefined,
      });
      try {
        // Retail task 24: no write actions, one assertion (the two materials).
        return await collectRollout(kit, firstSampleRequest(byId('retail-24')));
      } finally {
        await kit.close?.();
      }
    };
    const judged = await episode({ url: judgeUrl, model: 'all-met' });
    expect([judged.failed, judged.reward, judged.parts]).toStrictEqual([false, 1, { DB: 1, NL_ASSERTION: 1 }]);
    expect(judgeRequests.at(-1)!.messages[1]!.content).toContain(
      'assistant: The two t-shirts are made of polyester and cotton. ###STOP###',
    );
    const down = await episode({ url: closedUrl, model: 'all-met' });
    expect([down.failed, down.reward]).toStrictEqual([true, 0]);
    expect(down.error).toMatch(
      new RegExp(`^reward failed: judge at ${closedUrl.replaceAll('.', '\\.')}/chat/completions unreachable: `),
    );
  });
});
