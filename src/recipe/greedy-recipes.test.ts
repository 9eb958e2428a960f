import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { ConfigError } from '../errors/index.js';
import { projectRoot } from '../util/paths.js';
import { loadRecipe, resolvedYaml } from './index.js';

/** The shipped quickstart with `extra` lines appended, written beside nothing else. */
function quickstartWith(extra: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'atk-greedy-'));
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

describe('greedy-aligned training in recipes', () => {
  test('greedy_sft resolves to one greedy episode per task with the cross-entropy preset, visible in resolved.yaml', async () => {
    // the quickstart says group_size 8 and temperature 1.0; greedy_sft decides both
    const { recipe } = await loadRecipe(quickstartWith([]), ['algorithm.name=greedy_sft']);
    expect(recipe.algorithm).toMatchObject({
      name: 'greedy_sft',
      group_size: 1,
      baseline: 'none',
      std_normalize: false,
      drop_zero_variance_groups: false,
    });
    expect(recipe.rollout).toMatchObject({ temperature: 0, top_p: 1, top_k: -1, greedy_per_group: 0 });
    const yaml = resolvedYaml(recipe);
    expect(yaml).toMatch(/algorithm:\n {2}name: greedy_sft\n {2}group_size: 1\n/);
    expect(yaml).toMatch(/rollout:\n {2}concurrency: 128\n {2}temperature: 0\n {2}greedy_per_group: 0\n/);
  });

  test('greedy_per_group is kept for grpo and leaves the sampled temperature alone', async () => {
    const { recipe } = await loadRecipe(quickstartWith(['rollout:', '  greedy_per_group: 1']));
    expect(recipe.algorithm.group_size).toBe(8);
    expect(recipe.rollout).toMatchObject({ temperature: 1, greedy_per_group: 1 });
  });

  test('rejects greedy_per_group where it would do nothing or leave no sampled episode', async () => {
    expect(await problem(quickstartWith(['rollout:', '  greedy_per_group: 1']), ['algorithm.name=greedy_sft'])).toMatch(
      /rollout\.greedy_per_group.*does nothing with algorithm greedy_sft/,
    );
    expect(await problem(quickstartWith(['rollout:', '  greedy_per_group: 1']), ['algorithm.group_size=1'])).toMatch(
      /rollout\.greedy_per_group.*must be fewer than algorithm\.group_size \(1\)/,
    );
    expect(await problem(quickstartWith(['rollout:', '  greedy_per_group: 2']))).toMatch(/rollout\.greedy_per_group/);
  });
});
