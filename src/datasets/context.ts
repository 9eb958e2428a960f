import { resolve } from 'node:path';
import type { Recipe } from '../recipe/schema.js';
import { dataDir } from '../util/paths.js';
import type { DatasetContext } from './types.js';

/** What a dataset's `load` is given for a recipe: its dataset section, paths resolved against the recipe. */
export function datasetContext(recipe: Recipe, recipeDir: string): DatasetContext {
  const { dataset } = recipe;
  return {
    recipeDir,
    dataDir: dataDir(),
    ...(dataset.path === undefined ? {} : { path: resolve(recipeDir, dataset.path) }),
    seed: recipe.seed,
    options: dataset.options,
    config: dataset,
  };
}
