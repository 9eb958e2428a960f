import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { episodeOutcome } from '../__fixtures__/episode-outcome.js';
import { ConfigError, ProviderError } from '../errors/index.js';
import { judgeReward, parseJudgeScore } from './judge.js';

interface ChatRequest {
  readonly model: string;
  readonly messages: { role: string; content: string }[];
  readonly temperature: number;
}
const seen: { body: ChatRequest; headers: IncomingHttpHeaders }[] = [];

// A deterministic judge: 8/10 when the graded answer contains the reference, else 2/10; model
// names ask for failure modes.
const server = createServer((req, res) => {
  let text = '';
  req.on('data', (chunk: Buffer) => (text += chunk.toString()));
  req.on('end', () => {
    const body = JSON.parse(text) as ChatRequest;
    seen.push({ body, headers: req.headers });
    if (body.model === 'down') return void res.writeHead(500).end('overloaded');
    const user = body.messages[1]!.content;
    const graded = user.slice(user.indexOf('Answer to grade:'));
    const reply =
      body.model === 'rambler'
        ? 'I cannot decide.'
        : graded.includes('42')
          ? 'Correct and complete.\nSCORE: 8'
          : 'Wrong result.\nScore: 2';
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: reply } }] }));
  });
});
let url = '';
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
const ctx = { recipeDir: '.', warn: () => undefined };

describe('judgeReward', () => {
  it('returns the parsed score over max_score, with the reply in info, from a request carrying the rubric', async () => {
    const reward = await judgeReward.create(
      { url, model: 'grader', rubric: 'The answer must state the product.', max_score: 10 },
      ctx,
    );
    expect(await reward(episodeOutcome('6*7 is 42.'))).toStrictEqual({
      score: 0.8,
      info: { judge_score: 8, judge_reply: 'Correct and complete.\nSCORE: 8' },
    });
    expect(await reward(episodeOutcome('It is 41.'))).toMatchObject({ score: 0.2 });
    const { body } = seen.at(-1)!;
    expect(body.model).toBe('grader');
    expect(body.temperature).toBe(0);
    expect(body.messages[0]!.content).toContain('The answer must state the product.');
    expect(body.messages[1]!.content).toBe(
      'Task:\nWhat is 6*7?\n\nReference answer:\n42\n\nAnswer to grade:\nIt is 41.',
    );
  });

  it('returns a request with the API key from the named environment variable', async () => {
    process.env.ATK_TEST_JUDGE_KEY = 'sk-test';
    const reward = await judgeReward.create(
      { url, model: 'grader', rubric: 'r', api_key_env: 'ATK_TEST_JUDGE_KEY' },
      ctx,
    );
    await reward(episodeOutcome('42'));
    expect(seen.at(-1)!.headers.authorization).toBe('Bearer sk-test');
    delete process.env.ATK_TEST_JUDGE_KEY;
    await expect(
      judgeReward.create({ url, model: 'grader', rubric: 'r', api_key_env: 'ATK_TEST_JUDGE_KEY' }, ctx),
    ).rejects.toBeInstanceOf(ConfigError);
  });

  it('rejects a reply without a score and a failing server', async () => {
    await expect(
      (await judgeReward.create({ url, model: 'rambler', rubric: 'r' }, ctx))(episodeOutcome('42')),
    ).rejects.toThrow('judge reply has no SCORE: "I cannot decide."');
    const down = (await judgeReward.create({ url, model: 'down', rubric: 'r' }, ctx))(episodeOutcome('42'));
    await expect(down).rejects.toBeInstanceOf(ProviderError);
    await expect(down).rejects.toThrow(`judge at ${url}/chat/completions answered 500: overloaded`);
  });
});

describe('parseJudgeScore', () => {
  it('returns the last marked score, or a bare number', () => {
    expect(parseJudgeScore('Score: 3 at first... final SCORE: **7.5**')).toBe(7.5);
    expect(parseJudgeScore(' 9 ')).toBe(9);
    expect(parseJudgeScore('no idea, maybe 4')).toBeUndefined();
  });
});
