/**
 * Checks that need more than the schema: keys that depend on each other here; registered
 * component names, component options and engine settings from the components themselves, which
 * add theirs with `addRecipeCheck`/`addOptionsCheck` (the entry point registers the built-ins).
 * The loader locates each problem at the key it names, so it prints like any schema problem.
 */
import type { z } from 'zod';
import type { KeyPath } from './located.js';
import { trainsWithCrossEntropy } from './presets.js';
import type { ResolvedRecipe } from './resolve.js';
import { objectiveProblems } from './objective-checks.js';

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
export type RecipeCheck = (
  recipe: ResolvedRecipe,
  context: RecipeCheckContext,
) => readonly RecipeProblem[] | Promise<readonly RecipeProblem[]>;

const checks: RecipeCheck[] = [userSettings, scheduleLength, greedyEpisodes, dynamicSampling, curriculumReach];

/**
 * Add a check that every loaded recipe must pass (e.g. an engine kind that needs a GPU setting).
 * Register at module load time, next to the code whose assumptions it guards.
 */
export function addRecipeCheck(check: RecipeCheck): void {
  checks.push(check);
}

/** Run every check; all problems, in check order, the objective's combinations (objective-checks.ts) last. */
export async function checkRecipe(recipe: ResolvedRecipe, context: RecipeCheckContext): Promise<RecipeProblem[]> {
  const results = await Promise.all([...checks, objectiveProblems].map(async (check) => check(recipe, context)));
  return results.flat();
}

/** One component whose options failed its schema: where they were written and what was wrong. */
export interface ComponentOptionsFailure {
  /** Recipe key the options were written under, e.g. `reward.components.1.options`. */
  readonly path: string;
  readonly issues: readonly z.core.$ZodIssue[];
  /** The valid keys of a mapping at a path inside the options, for did-you-mean. */
  keysAt(path: KeyPath): string[];
}

/** A check of the options a recipe gives its components, against the schema each declares. */
export type OptionsCheck = (recipe: ResolvedRecipe) => Promise<readonly ComponentOptionsFailure[]>;

const optionsChecks: OptionsCheck[] = [];

/** Add a check of component options that every loaded recipe must pass; located like schema issues. */
export function addOptionsCheck(check: OptionsCheck): void {
  optionsChecks.push(check);
}

/** Run every options check; all failures, in check order. */
export async function checkOptions(recipe: ResolvedRecipe): Promise<ComponentOptionsFailure[]> {
  const results = await Promise.all(optionsChecks.map((check) => check(recipe)));
  return results.flat();
}

/** The simulated user's keys that depend on its kind (its engine's settings are the engine kind's own check). */
function userSettings(recipe: ResolvedRecipe): RecipeProblem[] {
  const problems: RecipeProblem[] = [];
  const { user } = recipe;
  if (user?.kind === 'url' && user.url === undefined)
    problems.push({ path: 'user.kind', message: 'kind url needs user.url' });
  if ((user?.kind === 'url' || user?.kind === 'engine') && user.model === undefined)
    problems.push({ path: 'user.kind', message: `kind ${user.kind} needs user.model` });
  if (user?.kind === 'engine' && user.engine === undefined)
    problems.push({ path: 'user.kind', message: 'kind engine needs user.engine' });
  return problems;
}

/** The trainer refuses a cosine schedule that ends before its warmup; say so before anything starts. */
function scheduleLength(recipe: ResolvedRecipe): RecipeProblem[] {
  const { algorithm, train } = recipe;
  const updates = train.steps * algorithm.updates_per_step;
  if (algorithm.lr_schedule === 'cosine' && updates <= algorithm.warmup_steps) {
    return [
      {
        path: 'algorithm.warmup_steps',
        message: `a cosine schedule needs more updates (train.steps x updates_per_step = ${updates}) than warmup_steps (${algorithm.warmup_steps})`,
      },
    ];
  }
  return [];
}

/** rollout.greedy_per_group mixes greedy episodes into sampled groups: it needs a sampled episode beside it. */
function greedyEpisodes(recipe: ResolvedRecipe): RecipeProblem[] {
  const greedy = recipe.rollout.greedy_per_group;
  const { name, group_size } = recipe.algorithm;
  if (greedy === 0) return [];
  if (name === 'greedy_sft' || name === 'sft')
    return [
      {
        path: 'rollout.greedy_per_group',
        message:
          name === 'sft'
            ? 'does nothing with algorithm sft, which samples no episodes'
            : 'does nothing with algorithm greedy_sft, whose every episode is greedy',
      },
    ];
  if (greedy >= group_size)
    return [
      {
        path: 'rollout.greedy_per_group',
        message: `must be fewer than algorithm.group_size (${group_size}): a group needs sampled episodes to compare`,
      },
    ];
  return [];
}

/** Dynamic sampling keeps groups whose rewards differ: it needs groups of two or more episodes with advantages. */
function dynamicSampling(recipe: ResolvedRecipe): RecipeProblem[] {
  const { name, group_size, dynamic_sampling } = recipe.algorithm;
  if (dynamic_sampling === undefined) return [];
  if (trainsWithCrossEntropy(name))
    return [
      {
        path: 'algorithm.dynamic_sampling',
        message: `does nothing with algorithm ${name}, which trains with cross-entropy, not on advantages`,
      },
    ];
  if (group_size < 2)
    return [
      {
        path: 'algorithm.dynamic_sampling',
        message: `needs algorithm.group_size of 2 or more (it is ${group_size}): a group of one episode never has a reward spread`,
      },
    ];
  return [];
}

/**
 * A curriculum acts from a task's (K+1)th draw on: with `sft` (every reference conversation counts as
 * solved) or a run that reads at most K epochs of a limited dataset, it would skip nothing or everything.
 */
function curriculumReach(recipe: ResolvedRecipe): RecipeProblem[] {
  const { curriculum, limit } = recipe.dataset;
  if (curriculum === undefined) return [];
  if (recipe.algorithm.name === 'sft')
    return [
      {
        path: 'dataset.curriculum',
        message: 'does nothing useful with algorithm sft: every reference conversation counts as solved',
      },
    ];
  const k = Math.min(curriculum.skip_solved ?? Infinity, curriculum.skip_unsolved ?? Infinity);
  const read = recipe.train.steps * recipe.train.tasks_per_step;
  // Dynamic sampling reads more tasks than the steps' share; how many depends on the rewards.
  if (limit !== undefined && recipe.algorithm.dynamic_sampling === undefined && read <= k * limit)
    return [
      {
        path: 'dataset.curriculum',
        message: `skips nothing: ${read} draws (train.steps x tasks_per_step) over ${limit} tasks (dataset.limit) reach no task more than ${k} times, and a task is skipped only after ${k} groups`,
      },
    ];
  return [];
}
