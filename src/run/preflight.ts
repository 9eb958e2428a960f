/**
 * The checks of a recipe that cost no compute and need the machine, not the recipe alone: they run
 * before `atk run` (or `atk eval` of a recipe file) makes a run directory, so a run that cannot start
 * leaves none behind.
 */
import type { ResolvedRecipe } from '../recipe/index.js';
import { engineKind } from '../policy/index.js';

/**
 * Refuses a recipe whose model files are not where its engine kind loads them from (a local
 * directory, or a hub id in the Hugging Face cache), with the error the session would give.
 * @throws TrainerError/InputError naming model.path and where it was looked for.
 */
export function preflightRecipe(recipe: ResolvedRecipe, recipeDir: string): void {
  engineKind(recipe).modelDir(recipe, recipeDir);
}
