/**
 * The checks of a recipe that cost no compute and need the machine, not the recipe alone: they run
 * before `atk run` (or `atk eval` of a recipe file) makes a run directory, so a run that cannot start
 * leaves none behind.
 */
import { isAbsolute } from 'node:path';
import { ConfigError, type ConfigIssue, InputError } from '../errors/index.js';
import { engineKind } from '../policy/index.js';
import type { LoadedRecipe, ResolvedRecipe } from '../recipe/index.js';
import { gpuCount } from '../setup/probe.js';
import { findExecutable } from '../tools/sandbox/capabilities.js';

/**
 * Refuses a recipe whose model files are not where its engine kind loads them from (a local
 * directory, or a hub id in the Hugging Face cache), with the error the session would give, and one
 * whose launched engine (vLLM, SGLang) has no command to start it on this machine.
 * @throws TrainerError/InputError naming model.path and where it was looked for; InputError naming the engine command.
 */
export function preflightRecipe(recipe: ResolvedRecipe, recipeDir: string): void {
  const kind = engineKind(recipe);
  kind.modelDir(recipe, recipeDir);
  // Replicas a cluster launcher places run on other nodes, whose PATH this machine cannot see.
  if (kind.defaultExecutable && recipe.cluster.launcher === 'local')
    engineCommandPresent(recipe, kind.defaultExecutable(recipe));
}

/**
 * Refuses GPU indices this machine does not have (`model.trainer.gpus`, `model.engine.gpus`), and
 * `model.trainer.device: cuda` on a machine with no GPU, each at the line that set it. On a cluster the
 * GPUs are the nodes', which this machine cannot see, so nothing is checked there.
 * @throws ConfigError, one located line per refused key.
 */
export async function preflightGpus(
  loaded: Pick<LoadedRecipe, 'recipe' | 'locate'>,
  count: () => Promise<number> = gpuCount,
): Promise<void> {
  const { recipe } = loaded;
  if (recipe.cluster.launcher !== 'local') return;
  const { trainer, engine } = recipe.model;
  const wanted: [string, readonly number[]][] = [
    ['model.trainer.gpus', trainer.gpus],
    ['model.engine.gpus', engine.gpus],
  ];
  if (trainer.device !== 'cuda' && engine.gpus.length === 0 && trainer.gpus.length === 0) return;
  const have = await count();
  const machine =
    have === 0
      ? 'this machine has no GPU (nvidia-smi finds none)'
      : `this machine has ${have} GPU${have > 1 ? 's' : ''} (0-${have - 1})`;
  const issues: ConfigIssue[] = wanted.flatMap(([path, gpus]) => {
    const missing = gpus.filter((g) => g >= have);
    return missing.length
      ? [{ ...loaded.locate(path), path, message: `GPU ${missing.join(', ')} not found: ${machine}` }]
      : [];
  });
  if (trainer.device === 'cuda' && have === 0 && trainer.gpus.length === 0)
    issues.push({
      ...loaded.locate('model.trainer.device'),
      path: 'model.trainer.device',
      message: `cuda needs a GPU: ${machine}; use auto or cpu`,
    });
  if (issues.length) throw new ConfigError(issues);
}

/** The executable that starts the engine: model.engine.command's, else the kind's own. */
function engineCommandPresent(recipe: ResolvedRecipe, defaultExecutable: string): void {
  const { engine } = recipe.model;
  const file = engine.command?.[0] ?? defaultExecutable;
  // A relative path is run from the run directory, which does not exist yet.
  if (file.includes('/') && !isAbsolute(file)) return;
  if (findExecutable(file, isAbsolute(file) ? file : undefined)) return;
  throw new InputError(
    `${engine.kind}: cannot start the ${engine.kind} engine: no executable ${file}${isAbsolute(file) ? '' : ' on PATH'}`,
    {
      hint: engine.command
        ? 'model.engine.command names the command that starts the engine'
        : `install it (pip install ${engine.kind}; atk doctor shows the versions atk supports), or set model.engine.command`,
    },
  );
}
