/**
 * Checks that need more than the schema: registered component names, keys that depend on each
 * other. Other parts add their own with `addRecipeCheck`; the loader locates each problem at the
 * key it names, so it prints like any schema problem.
 */
import '../builtins.js';
import { datasets } from '../datasets/index.js';
import { checkClusterPlacement } from '../cluster/recipe-check.js';
import { checkEngineSettings } from '../engines/engine-settings.js';
import { rewards } from '../rewards/index.js';
import { tools } from '../tools/index.js';
import type { Registry } from '../util/registry.js';
import { validateCustomComponents } from './custom-checks.js';
import type { ResolvedRecipe } from './resolve.js';

/** One problem a check found: a dotted key path (`tools.0.name`) and a one-line message. */
export interface RecipeProblem {
  readonly path: string;
  readonly message: string;
}

/** What a check may need beside the recipe. */
export interface RecipeCheckContext {
  /** The recipe file's directory: the user's tool and reward modules and commands resolve against it. */
  readonly dir: string;
}

/** A semantic check over a recipe that already passed the schema. */
export type RecipeCheck = (recipe: ResolvedRecipe, context: RecipeCheckContext) => readonly RecipeProblem[] | Promise<readonly RecipeProblem[]>;

const checks: RecipeCheck[] = [componentNames, engineUrl, checkEngineSettings, scheduleLength, customComponents, (recipe) => checkClusterPlacement(recipe)];

/**
 * Add a check that every loaded recipe must pass (e.g. an engine kind that needs a GPU setting).
 * Register at module load time, next to the code whose assumptions it guards.
 */
export function addRecipeCheck(check: RecipeCheck): void {
  checks.push(check);
}

/** Run every check; all problems, in check order. */
export async function checkRecipe(recipe: ResolvedRecipe, context: RecipeCheckContext): Promise<RecipeProblem[]> {
  const results = await Promise.all(checks.map(async (check) => check(recipe, context)));
  return results.flat();
}

function componentNames(recipe: ResolvedRecipe): RecipeProblem[] {
  const problems: RecipeProblem[] = [];
  const check = (registry: Registry<unknown>, name: string | undefined, path: string): void => {
    if (name !== undefined && !registry.has(name)) problems.push({ path, message: registry.unknownMessage(name) });
  };
  check(datasets, recipe.dataset.name, 'dataset.name');
  recipe.tools.forEach((tool, i) => check(tools, tool.name, `tools.${i}.name`));
  check(rewards, recipe.reward.name, 'reward.name');
  recipe.reward.components?.forEach((component, i) => check(rewards, component.name, `reward.components.${i}.name`));
  return problems;
}

/**
 * The user's own modules, commands and data files (see validateCustomComponents), so `atk validate`
 * and `atk run` refuse a missing module or export, a command that cannot run or a missing column
 * before anything starts, at the key that names it.
 */
function customComponents(recipe: ResolvedRecipe, { dir }: RecipeCheckContext): Promise<RecipeProblem[]> {
  return validateCustomComponents(recipe, dir);
}

function engineUrl(recipe: ResolvedRecipe): RecipeProblem[] {
  const { engine } = recipe.model;
  const problems: RecipeProblem[] = [];
  if (engine.kind === 'url' && engine.url === undefined) problems.push({ path: 'model.engine.kind', message: 'kind url needs model.engine.url' });
  const { user } = recipe;
  if (user?.kind === 'url' && user.url === undefined) problems.push({ path: 'user.kind', message: 'kind url needs user.url' });
  if (user?.kind === 'scripted' && user.messages === undefined) problems.push({ path: 'user.kind', message: 'kind scripted needs user.messages' });
  if ((user?.kind === 'url' || user?.kind === 'engine') && user.model === undefined) problems.push({ path: 'user.kind', message: `kind ${user.kind} needs user.model` });
  if (user?.kind === 'engine' && user.engine === undefined) problems.push({ path: 'user.kind', message: 'kind engine needs user.engine' });
  if (user?.kind === 'engine' && user.engine?.kind === 'embedded') problems.push({ path: 'user.engine.kind', message: 'a second embedded engine is not supported: use user.kind policy, or a vllm, sglang or url engine' });
  if (user?.engine?.kind === 'url' && user.engine.url === undefined) problems.push({ path: 'user.engine.kind', message: 'kind url needs user.engine.url' });
  return problems;
}

/** The trainer refuses a cosine schedule that ends before its warmup; say so before anything starts. */
function scheduleLength(recipe: ResolvedRecipe): RecipeProblem[] {
  const { algorithm, train } = recipe;
  const updates = train.steps * algorithm.updates_per_step;
  if (algorithm.lr_schedule === 'cosine' && updates <= algorithm.warmup_steps) {
    return [{ path: 'algorithm.warmup_steps', message: `a cosine schedule needs more updates (train.steps x updates_per_step = ${updates}) than warmup_steps (${algorithm.warmup_steps})` }];
  }
  return [];
}
