import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { runStrandsTool } from '../domains/tau2/tools/common.js';
import { episodeOutcome } from '../__fixtures__/episode-outcome.js';
import { datasetContext } from '../datasets/context.js';
import { datasets } from '../datasets/index.js';
import { composeReward } from '../rewards/compose.js';
import { toolComponent } from '../tools/components.js';
import { tools } from '../tools/index.js';
import type { EpisodeEnv } from '../tools/types.js';
import { projectRoot } from '../util/paths.js';
import { validateCustomComponents } from './custom-checks.js';
import { RecipeSchema } from '../recipe/schema.js';

const dir = mkdtempSync(join(tmpdir(), 'atk-custom-checks-'));
writeFileSync(join(dir, 'tasks.jsonl'), '{"q": "1+1?", "a": 2}\n{"q": "2+2?"}\n');
writeFileSync(join(dir, 'tools.ts'), 'export const helper = () => 1;\n');
writeFileSync(join(dir, 'grade.ts'), 'export const grade = 5;\n');
writeFileSync(join(dir, 'score.sh'), '#!/bin/sh\necho 1\n');
chmodSync(join(dir, 'score.sh'), 0o644);

function recipe(overrides: Record<string, unknown>) {
  return RecipeSchema.parse({
    name: 'r',
    model: { path: 'm' },
    reward: { name: 'math_answer' },
    dataset: { name: 'arith' },
    ...overrides,
  });
}

describe('validateCustomComponents', () => {
  it('returns no problems for the shipped custom example', async () => {
    const exampleDir = join(projectRoot(), 'recipes', 'examples', 'custom');
    const example = RecipeSchema.parse(parse(readFileSync(join(exampleDir, 'custom.yaml'), 'utf8')));
    expect(await validateCustomComponents(example, exampleDir)).toStrictEqual([]);
  });

  it('returns every problem at its recipe key', async () => {
    const problems = await validateCustomComponents(
      recipe({
        dataset: { path: 'tasks.jsonl', fields: { prompt: 'q', answer: 'a', metadata: ['level'] } },
        tools: [
          { module: './missing.ts' },
          { module: './tools.ts', export: 'lookup' },
          { module: './tools.ts', export: 'helper' },
          { mcp: { command: 'no-such-mcp-server-atk' } },
        ],
        reward: {
          components: [
            { module: 'grade.ts', export: 'grade' },
            { command: ['./score.sh'] },
            { judge: { url: 'http://127.0.0.1:9/v1', model: 'm', rubric: 'r', api_key_env: 'ATK_UNSET_JUDGE_KEY' } },
          ],
        },
      }),
      dir,
    );
    // tools.2 names a function: it is called per episode, so only the episode can check its result.
    expect(problems.sort((a, b) => a.path.localeCompare(b.path))).toStrictEqual([
      { path: 'dataset.fields.answer', message: "column 'a' is missing in tasks.jsonl row 2" },
      { path: 'dataset.fields.metadata.0', message: "column 'level' is missing in tasks.jsonl row 1" },
      { path: 'reward.components.0.export', message: "export 'grade' is number, not a function" },
      { path: 'reward.components.1.command.0', message: './score.sh is not an executable file' },
      { path: 'reward.components.2.judge.api_key_env', message: 'environment variable ATK_UNSET_JUDGE_KEY is not set' },
      { path: 'tools.0.module', message: 'no such module' },
      { path: 'tools.1.export', message: "no export 'lookup'; it exports helper" },
      { path: 'tools.3.mcp.command', message: "command 'no-such-mcp-server-atk' is not on $PATH" },
    ]);
  });

  it('returns problems for a missing or empty data file', async () => {
    expect(await validateCustomComponents(recipe({ dataset: { path: 'absent.csv' } }), dir)).toStrictEqual([
      { path: 'dataset.path', message: 'cannot read (ENOENT)' },
    ]);
    writeFileSync(join(dir, 'empty.json'), '[]');
    expect(
      await validateCustomComponents(
        recipe({ dataset: { path: 'tasks.jsonl', split_by: { file: 'empty.json' }, fields: { prompt: 'q' } } }),
        dir,
      ),
    ).toStrictEqual([{ path: 'dataset.split_by.file', message: 'no rows' }]);
  });
});

describe('custom example', () => {
  it('returns tasks, a working tool and a reward through the registries', async () => {
    const exampleDir = join(projectRoot(), 'recipes', 'examples', 'custom');
    const example = RecipeSchema.parse(parse(readFileSync(join(exampleDir, 'custom.yaml'), 'utf8')));
    const ctx = datasetContext(example, exampleDir);
    const file = await datasets.get(example.dataset.name);
    const [train, evaluation] = [
      await file.load(example.dataset.split, ctx),
      await file.load(example.dataset.eval_split, ctx),
    ];
    expect([train.length, evaluation.length]).toStrictEqual([4, 1]);
    const task = train.find((t) => t.id === 'row-4')!;
    expect(task).toStrictEqual({ id: 'row-4', prompt: 'What is 64 * 23?', answer: 1472, data: { level: 'medium' } });

    const { name, options } = toolComponent(example.tools[0]!);
    const env = { episodeId: '0-0', task, state: new Map(), signal: new AbortController().signal } as EpisodeEnv;
    const [calculator] = (
      await (await tools.get(name)).create(options, { recipeDir: exampleDir, warn: () => undefined })
    )(env);
    expect(await runStrandsTool(calculator!, { expression: '64 * 23' })).toStrictEqual({
      status: 'success',
      output: '1472',
    });
    expect(await runStrandsTool(calculator!, { expression: 'process.exit(1)' })).toStrictEqual({
      status: 'error',
      output: 'Error: not an arithmetic expression: process.exit(1)',
    });

    const reward = await composeReward(example.reward, { recipeDir: exampleDir, warn: () => undefined });
    expect(await reward({ ...episodeOutcome('64 * 23 = 1472', 1472), task })).toStrictEqual({
      score: 1.1,
      parts: { correct: 1, used_calculator: 0.1 },
    });
  });
});
