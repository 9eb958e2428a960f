import { ensureRecipeData } from '../datasets/recipe-data.js';
import { loadRecipe, resolvedYaml, type LoadedRecipe } from '../recipe/index.js';
import { createRunDir, openRunDir, type LockOptions, type RunDir } from '../runs/index.js';
import { ensureTrainerPython, type TrainerPythonOptions } from './trainer-python.js';
import { attachTrackers } from './trackers.js';

/** A validated recipe and the run directory it runs in. */
export interface RecipeRun {
  readonly loaded: LoadedRecipe;
  readonly run: RunDir;
}

/**
 * What to check before the run directory is made, besides the model files (always checked): the
 * recipe's built-in data (`atk run --fetch`), the trainer's Python.
 */
export interface RecipeDataOptions {
  /** Fetch it first (else refuse with the command that would). */
  readonly fetch?: boolean;
  readonly print?: (line: string) => void;
  /** The run trains: find the trainer's Python first, offering `atk setup` when it is missing (`atk run`). */
  readonly trainerPython?: TrainerPythonOptions;
}

/**
 * Validates the recipe, starts it from another run's checkpoint when model.path names one (model-from-run),
 * checks its model files and built-in data are there (or fetches the data), reads
 * `agent.tool_call_format: auto` off the model's chat template, fills in vLLM's CPU settings where vLLM
 * runs on a CPU (run/cpu-engine-settings.ts), then
 * creates its run directory under `output.runs_dir` as `<name><suffix>/vNNN` (nothing is created for
 * an invalid recipe, a missing model, GPU indices the machine lacks or missing data). `atk run` and `atk eval` of a recipe file both start here, so their run
 * directories record the same facts.
 * @throws ConfigError for an invalid recipe or override; InputError/TrainerError naming model.path for
 * missing model files; InputError naming agent.tool_call_format for a chat template in no format atk
 * parses; InputError naming `atk data fetch ...` for missing data.
 */
export async function newRecipeRun(
  recipeFile: string,
  overrides: readonly string[],
  suffix = '',
  data: RecipeDataOptions = {},
): Promise<RecipeRun> {
  let validated = await loadRecipe(recipeFile, overrides);
  // A model.path naming another run becomes that run's newest checkpoint before anything checks the model.
  const { modelFromRun } = await import('../run/model-from-run.js');
  const started = await modelFromRun(validated.recipe);
  if (started.from) {
    const { run, step, dir, merged } = started.from;
    data.print?.(
      `model.path ${validated.recipe.model.path}: step ${step} of ${run}${merged ? ', LoRA merged' : ''} (${dir})`,
    );
    validated = { ...validated, recipe: started.recipe };
  }
  // Imported here so commands that never start a run do not load the engine kinds.
  const { preflightRecipe, preflightGpus } = await import('../run/preflight.js');
  preflightRecipe(validated.recipe, validated.dir);
  await preflightGpus(validated);
  const { withToolCallFormat } = await import('../run/recipe-tokenizer.js');
  const { withCpuEngineSettings } = await import('../run/cpu-engine-settings.js');
  const recipe = await withCpuEngineSettings(await withToolCallFormat(validated.recipe, validated.dir));
  const loaded = { ...validated, recipe };
  await ensureRecipeData(loaded.recipe, data);
  if (data.trainerPython) await ensureTrainerPython(loaded.recipe.model.trainer.python, data.trainerPython);
  const run = await createRunDir({
    runsDir: loaded.recipe.output.runs_dir,
    name: `${loaded.recipe.name}${suffix}`,
    recipeText: loaded.sourceText,
    resolvedYaml: resolvedYaml(loaded.recipe),
    seed: loaded.recipe.seed,
    recipeFile: loaded.file,
    command: process.argv.slice(1),
  });
  attachTrackers(run, loaded.recipe);
  return { loaded, run };
}

/**
 * Reopens a run directory, takes its writer lock and reloads its resolved recipe; overrides may
 * still change it (e.g. `train.steps` when resuming, `rollout.concurrency` for an eval). The user's
 * tool and reward modules and commands resolve against the original recipe's directory, as in the run.
 * @throws InputError when `dir` is not a run directory or another live atk writes it; ConfigError for an invalid override.
 */
export async function reopenRecipeRun(
  dir: string,
  overrides: readonly string[],
  lock: LockOptions = {},
): Promise<RecipeRun> {
  const run = await openRunDir(dir);
  await run.lock(lock);
  const loaded = await loadRecipe(run.paths.resolved, overrides, { dir: await run.recipeDir() });
  attachTrackers(run, loaded.recipe);
  return { loaded, run };
}
