/**
 * The recipe checks that need the component registries: every name a recipe gives a dataset,
 * tool or reward is registered, every component's options pass its schema, and a user's own
 * modules, commands and data files are usable. The entry point adds them once, with the built-ins.
 */
import { datasets } from '../datasets/index.js';
import type { RecipeCheckContext, RecipeProblem } from '../recipe/checks.js';
import type { ResolvedRecipe } from '../recipe/resolve.js';
import { rewards } from '../rewards/index.js';
import { tools } from '../tools/index.js';
import type { Registry } from '../util/registry.js';
import { validateCustomComponents } from './custom-checks.js';

export { componentOptionsFailures } from './component-options.js';

/** Every component name the recipe uses that no registry knows, at the key that names it. */
export function componentNames(recipe: ResolvedRecipe): RecipeProblem[] {
  const problems: RecipeProblem[] = [];
  const check = (registry: Registry<unknown>, name: string | undefined, path: string): void => {
    if (name !== undefined && !registry.has(name)) problems.push({ path, message: registry.unknownMessage(name) });
  };
  check(datasets, recipe.dataset.name, 'dataset.name');
  for (const [i, tool] of recipe.tools.entries()) check(tools, tool.name, `tools.${i}.name`);
  check(rewards, recipe.reward.name, 'reward.name');
  for (const [i, component] of (recipe.reward.components ?? []).entries())
    check(rewards, component.name, `reward.components.${i}.name`);
  return problems;
}

/** A scripted user plays `user.messages`, or else the dataset's own scripted user: one of them must exist. */
export async function scriptedUserSource(recipe: ResolvedRecipe): Promise<RecipeProblem[]> {
  const { user, dataset } = recipe;
  if (user?.kind !== 'scripted' || user.messages !== undefined || !datasets.has(dataset.name)) return [];
  if ((await datasets.get(dataset.name)).userSimulation?.scriptedUser) return [];
  return [
    { path: 'user.kind', message: `kind scripted needs user.messages (dataset ${dataset.name} has no scripted user)` },
  ];
}

/**
 * The user's own modules, commands and data files (see validateCustomComponents), so `atk validate`
 * and `atk run` refuse a missing module or export, a command that cannot run or a missing column
 * before anything starts, at the key that names it.
 */
export function customComponents(recipe: ResolvedRecipe, { dir }: RecipeCheckContext): Promise<RecipeProblem[]> {
  return validateCustomComponents(recipe, dir);
}
