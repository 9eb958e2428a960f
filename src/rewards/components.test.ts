import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { episodeOutcome } from '../__fixtures__/episode-outcome.js';
import { RecipeSchema, RewardSchema } from '../recipe/schema.js';
import { rewardComponents } from './components.js';
import { composeReward } from './compose.js';

const dir = mkdtempSync(join(tmpdir(), 'atk-reward-components-'));
writeFileSync(
  join(dir, 'grade.mjs'),
  'export function grade(o) { return { correct: o.finalText.includes("42") ? 1 : 0 }; }\n',
);
writeFileSync(join(dir, 'length.py'), 'import json, sys\nprint(len(json.load(sys.stdin)["final_text"]))\n');

describe('rewardComponents', () => {
  it('returns each recipe form as a registered reward with a unique label', () => {
    const config = RewardSchema.parse({
      components: [
        { module: './grade.mjs', export: 'grade', weight: 2 },
        { command: ['python3', 'length.py'], timeout_s: 5 },
        { judge: { url: 'http://127.0.0.1:1/v1', model: 'm', rubric: 'r' }, label: 'style' },
        { name: 'math_answer' },
        { module: './other.ts' },
        { module: './grade.mjs', export: 'grade' },
      ],
    });
    expect(
      rewardComponents(config).map(({ label, name, weight, path, optionsPath }) => ({
        label,
        name,
        weight,
        path,
        optionsPath,
      })),
    ).toStrictEqual([
      { label: 'grade', name: 'module', weight: 2, path: 'reward.components.0', optionsPath: 'reward.components.0' },
      { label: 'command', name: 'command', weight: 1, path: 'reward.components.1', optionsPath: 'reward.components.1' },
      {
        label: 'style',
        name: 'judge',
        weight: 1,
        path: 'reward.components.2',
        optionsPath: 'reward.components.2.judge',
      },
      {
        label: 'math_answer',
        name: 'math_answer',
        weight: 1,
        path: 'reward.components.3',
        optionsPath: 'reward.components.3.options',
      },
      { label: 'other', name: 'module', weight: 1, path: 'reward.components.4', optionsPath: 'reward.components.4' },
      { label: 'grade_2', name: 'module', weight: 1, path: 'reward.components.5', optionsPath: 'reward.components.5' },
    ]);
    expect(rewardComponents(config)[1]!.options).toStrictEqual({ command: ['python3', 'length.py'], timeout_s: 5 });
    expect(rewardComponents(RewardSchema.parse({ module: 'g.ts' }))).toStrictEqual([
      {
        label: 'g',
        name: 'module',
        weight: 1,
        options: { module: 'g.ts', options: {} },
        path: 'reward',
        optionsPath: 'reward',
      },
    ]);
  });

  it('rejects two sources in one entry and a tool with none', () => {
    expect(RewardSchema.safeParse({ name: 'math_answer', module: 'g.ts' }).error?.issues[0]).toMatchObject({
      path: ['module'],
      message: 'give only one of name, module for the reward',
    });
    const tools = RecipeSchema.safeParse({
      name: 'r',
      model: { path: 'm' },
      reward: { name: 'x' },
      tools: [{ options: {} }],
    });
    expect(tools.error?.issues[0]).toMatchObject({
      path: ['tools', 0],
      message: 'a tool needs one of name, module, mcp',
    });
  });
});

describe('composeReward', () => {
  it('returns a weighted sum of a module and a command reward with each part logged', async () => {
    const config = RewardSchema.parse({
      components: [
        { module: 'grade.mjs', export: 'grade', weight: 0.5 },
        { command: ['/usr/bin/python3', 'length.py'], weight: 0.1 },
      ],
    });
    const reward = await composeReward(config, { recipeDir: dir, warn: () => undefined });
    const scored = await reward(episodeOutcome('It is 42'));
    expect(scored.parts).toStrictEqual({ grade: 1, 'grade.correct': 1, command: 8 });
    expect(scored.score).toBeCloseTo(0.5 + 0.8);
  });
});
