import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { ConfigError } from '../errors/index.js';
import { projectRoot } from '../util/paths.js';
import { loadRecipe, resolvedYaml } from './index.js';

const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** The shipped quickstart with `extra` lines appended, written beside nothing else. */
function quickstartWith(extra: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'atk-sampling-'));
  made.push(dir);
  const file = join(dir, 'r.yaml');
  writeFileSync(file, `extends: ${join(projectRoot(), 'recipes/quickstart.yaml')}\nname: r\n${extra.join('\n')}\n`);
  return file;
}

async function problem(file: string, overrides: string[] = []): Promise<string> {
  const error = await loadRecipe(file, overrides).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConfigError);
  return (error as ConfigError).message;
}

const DYNAMIC = ['algorithm:', '  dynamic_sampling: {}'];
const CURRICULUM = ['dataset:', '  curriculum: {skip_solved: 2}'];

describe('dynamic sampling and curriculum in recipes', () => {
  test('returns dynamic sampling with its default rounds and the curriculum as written, both in resolved.yaml', async () => {
    const { recipe } = await loadRecipe(quickstartWith([...DYNAMIC, ...CURRICULUM]));
    expect(recipe.algorithm.dynamic_sampling).toStrictEqual({ max_rounds: 3 });
    expect(recipe.dataset.curriculum).toStrictEqual({ skip_solved: 2 });
    const yaml = resolvedYaml(recipe);
    expect(yaml).toMatch(/\n {2}dynamic_sampling:\n {4}max_rounds: 3\n/);
    expect(yaml).toMatch(/\n {2}curriculum:\n {4}skip_solved: 2\n/);
    const { recipe: plain } = await loadRecipe(quickstartWith([]));
    expect([plain.algorithm.dynamic_sampling, plain.dataset.curriculum]).toStrictEqual([undefined, undefined]);
  });

  test('rejects dynamic sampling where no group can have a reward spread or nothing trains on advantages', async () => {
    expect(await problem(quickstartWith(DYNAMIC), ['algorithm.group_size=1'])).toMatch(
      /r\.yaml:\d+.*algorithm\.dynamic_sampling.*needs algorithm\.group_size of 2 or more \(it is 1\)/,
    );
    expect(await problem(quickstartWith(DYNAMIC), ['algorithm.name=filtered_sft'])).toMatch(
      /algorithm\.dynamic_sampling.*does nothing with algorithm filtered_sft/,
    );
    expect(await problem(quickstartWith(['algorithm:', '  dynamic_sampling: {max_rounds: 0}']))).toMatch(
      /algorithm\.dynamic_sampling\.max_rounds/,
    );
  });

  test('rejects a curriculum without a rule, with sft, or on a run too short to skip anything', async () => {
    expect(await problem(quickstartWith(['dataset:', '  curriculum: {}']))).toMatch(
      /dataset\.curriculum.*needs skip_solved or skip_unsolved/,
    );
    expect(await problem(quickstartWith(CURRICULUM), ['algorithm.name=sft'])).toMatch(
      /dataset\.curriculum.*does nothing useful with algorithm sft/,
    );
    // 10 steps x 4 tasks = 40 draws over 20 tasks: each task twice at most, and skip_solved 2 needs a third.
    const short = ['train.steps=10', 'train.tasks_per_step=4', 'dataset.limit=20'];
    expect(await problem(quickstartWith(CURRICULUM), short)).toMatch(
      /dataset\.curriculum.*skips nothing: 40 draws \(train\.steps x tasks_per_step\) over 20 tasks \(dataset\.limit\) reach no task more than 2 times/,
    );
    await expect(loadRecipe(quickstartWith(CURRICULUM), [...short, 'train.steps=11'])).resolves.toBeDefined();
    // Dynamic sampling's refills read further: the run's reach is not known before it runs.
    await expect(loadRecipe(quickstartWith([...CURRICULUM, ...DYNAMIC]), short)).resolves.toBeDefined();
  });
});
