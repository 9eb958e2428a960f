import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { parse } from 'yaml';
import { RecipeSchema } from '../recipe/schema.js';
import { rewards } from '../rewards/index.js';
import { tools } from '../tools/index.js';
import { fullOrSlice } from '../__fixtures__/test-data.js';
import { dataDir, projectRoot } from '../util/paths.js';
import { datasets } from './index.js';

// `atk validate` will cover every shipped recipe; until then this checks the DeepCoder ones.
describe('DeepCoder recipes', () => {
  test.each(['recipes/deepcoder-grpo.yaml', 'recipes/smoke/deepcoder.yaml'])(
    'returns a valid recipe whose components accept their options for %s',
    async (file) => {
      const recipe = RecipeSchema.parse(parse(readFileSync(join(projectRoot(), file), 'utf8')));
      const ctx = { recipeDir: '.', warn: () => undefined };
      for (const t of recipe.tools) await (await tools.get(t.name ?? '')).create(t.options, ctx);
      await (await rewards.get(recipe.reward.name ?? '')).create(recipe.reward.options, ctx);
      const evalTasks = await (await datasets.get(recipe.dataset.name)).load(recipe.dataset.eval_split, {
        recipeDir: '.',
        dataDir: dataDir(),
        seed: 0,
        options: recipe.dataset.options,
      });
      // The test/data slice holds 24 problems, fewer than the full recipe's eval_limit of 128.
      expect(evalTasks.length).toBeGreaterThanOrEqual(fullOrSlice(recipe.dataset.eval_limit ?? 1, 5));
    },
  );
});
