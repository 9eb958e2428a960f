import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { parse } from 'yaml';
import { RecipeSchema } from '../../recipe/schema.js';
import { projectRoot } from '../../util/paths.js';

describe('tau2 recipes', () => {
  test.each(['tau2-retail-grpo.yaml', 'tau2-airline-grpo.yaml'])('returns a valid recipe for %s', async (file) => {
    const recipe = RecipeSchema.parse(parse(await readFile(join(projectRoot(), 'recipes', file), 'utf8')));
    const domain = file.includes('retail') ? 'retail' : 'airline';
    expect({
      dataset: [recipe.dataset.name, recipe.dataset.options.domain],
      tool: [recipe.tools[0]!.name, recipe.tools[0]!.options.domain],
      reward: [recipe.reward.name, recipe.reward.options.domain, recipe.reward.options.basis],
      engine: recipe.model.engine.kind,
      user: recipe.user?.kind,
    }).toStrictEqual({
      dataset: ['tau2', domain],
      tool: ['tau2', domain],
      reward: ['tau2', domain, 'judge_free'],
      engine: 'vllm',
      user: domain === 'retail' ? 'url' : 'engine',
    });
  });
});
