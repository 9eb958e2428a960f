/**
 * The recipe check that the cluster launcher can hold the recipe: one of the recipe loader's checks,
 * so `atk validate` and `atk run` both refuse a recipe the allocation cannot place.
 */
import { AtkError } from '../errors/index.js';
import type { ResolvedRecipe } from '../recipe/resolve.js';
import { readAllocation } from './launchers.js';
import { planPlacement, staticPlacementProblems, type PlacementProblem } from './placement.js';

/**
 * Problems placing the recipe on the allocation `env` describes; outside a Slurm allocation only the
 * problems the recipe has whatever the allocation.
 */
export function checkClusterPlacement(
  recipe: ResolvedRecipe,
  env: NodeJS.ProcessEnv = process.env,
): PlacementProblem[] {
  try {
    const allocation = readAllocation(recipe.cluster, env);
    return allocation ? planPlacement(recipe, allocation).problems : staticPlacementProblems(recipe);
  } catch (error) {
    if (error instanceof AtkError)
      return [
        { path: recipe.cluster.launcher === 'hosts' ? 'cluster.hosts' : 'cluster.launcher', message: error.message },
      ];
    throw error;
  }
}
