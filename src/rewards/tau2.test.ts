import { describe, expect, test } from 'vitest';
import '../builtins.js';
import { datasets } from '../datasets/index.js';
import { perfectToolCalls } from '../__fixtures__/tau2-perfect.js';
import type { Task } from '../datasets/types.js';
import { tools } from '../tools/index.js';
import type { EpisodeEnv } from '../tools/types.js';
import { dataDir } from '../util/paths.js';
import { rewards } from './index.js';

/** A perfect episode through the registered dataset, tools and reward, in Strands message JSON. */
async function perfectEpisode(task: Task, finalUserText: string) {
  const makeTools = await (await tools.get('tau2')).create({ domain: 'retail' }, { recipeDir: '.', warn: () => {} });
  const env: EpisodeEnv = { episodeId: 'e', task, state: new Map(), signal: new AbortController().signal };
  const { toolCalls, communicateInfo } = await perfectToolCalls(task, makeTools(env));
  const messages = [
    { role: 'assistant', content: [{ text: task.data.greeting }] },
    { role: 'user', content: [{ text: 'Hello' }] },
    { role: 'assistant', content: [{ text: `<tool_call>{"name": "x"}</tool_call>` }, { toolUse: { name: 'x', toolUseId: '1', input: {} } }] },
    { role: 'user', content: [{ toolResult: { toolUseId: '1', status: 'success', content: [{ text: 'ok' }] } }] },
    { role: 'assistant', content: [{ text: `Done: ${communicateInfo.join(', ')}` }] },
    { role: 'user', content: [{ text: finalUserText }] },
  ];
  return { task, finalText: '', messages, toolCalls, finishReason: 'endTurn', env };
}

describe('tau2Reward', () => {
  test('returns 1 with its parts for a perfect retail episode and warns once that NL_ASSERTION was dropped', async () => {
    const [task] = await (await datasets.get('tau2')).load('test', { recipeDir: '.', dataDir: dataDir(), seed: 0, options: { domain: 'retail' } });
    expect(task!.prompt).toBe('');
    expect(String(task!.data.system_prompt)).toContain('<policy>');
    const warnings: string[] = [];
    const reward = await (await rewards.get('tau2')).create({ domain: 'retail' }, { recipeDir: '.', warn: (m) => warnings.push(m) });
    const first = await reward(await perfectEpisode(task!, 'Great, thanks! ###STOP###'));
    await reward(await perfectEpisode(task!, 'Great, thanks! ###STOP###'));
    expect(first).toMatchObject({ score: 1, parts: { DB: 1 } });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('NL_ASSERTION');
  });

  test('returns 0 when the episode ended without a stop token', async () => {
    const [task] = await (await datasets.get('tau2')).load('test', { recipeDir: '.', dataDir: dataDir(), seed: 0, options: { domain: 'retail' } });
    const reward = await (await rewards.get('tau2')).create({ domain: 'retail', basis: 'judge_free' }, { recipeDir: '.', warn: () => {} });
    expect(await reward(await perfectEpisode(task!, 'Great, thanks!'))).toMatchObject({ score: 0, parts: {} });
  });

  test('rejects an unknown domain with the option path', async () => {
    await expect((await rewards.get('tau2')).create({ domain: 'telecom' }, { recipeDir: '.', warn: () => {} })).rejects.toThrow(/reward\.options\.domain/);
  });
});
