import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { dirname, isAbsolute, join } from 'node:path';
import { parse } from 'yaml';
import { InputError } from '../errors/index.js';
import type { ResolvedRecipe } from '../recipe/index.js';
import { CHECKPOINT_MARKER, findRun, openRunDir, stepName, type RunDir } from '../runs/index.js';
import { mergeLoraAdapter } from '../trainer/index.js';

/** Where a recipe's model came from when `model.path` named another run. */
export interface ModelFromRun {
  /** The run version directory and the checkpoint step the model is. */
  readonly run: string;
  readonly step: number;
  /** The directory the model now loads from (the checkpoint, or its adapter merged into the base). */
  readonly dir: string;
  readonly merged: boolean;
}

/**
 * `model.path` naming another run, so a warm start and an RL run chain without an export: a run (`runs/<name>`,
 * `runs/<name>/latest`, `runs/<name>/v002`, looked up as `atk export` does, also under output.runs_dir), a
 * run version directory or one of its checkpoint directories. The recipe then starts from that run's newest
 * complete checkpoint (the one named): a full-weight checkpoint as it is, a LoRA adapter merged into its base
 * once (kept in the source run as `merged/step-NNNNN`, which later runs reuse). Unless the recipe sets them,
 * `model.tokenizer` and `model.chat_template` are the source run's, so the tool format it learnt is kept.
 * Any other `model.path` (a model directory, a hub id) comes back unchanged with `from` undefined.
 * @throws InputError when the run has no complete checkpoint, or a path shaped like a run reference names none.
 */
export async function modelFromRun(
  recipe: ResolvedRecipe,
): Promise<{ readonly recipe: ResolvedRecipe; readonly from?: ModelFromRun }> {
  const source = await sourceCheckpoint(recipe.model.path, recipe.output.runs_dir);
  if (source === undefined) return { recipe };
  const { run, step, dir } = source;
  const resolved = parse(readFileSync(run.paths.resolved, 'utf8')) as {
    model?: { path?: string; tokenizer?: string; chat_template?: string };
  };
  const tokenizer = recipe.model.tokenizer ?? resolved.model?.tokenizer ?? resolved.model?.path;
  const chatTemplate = recipe.model.chat_template ?? resolved.model?.chat_template;
  const adapter = existsSync(join(dir, 'adapter_config.json'));
  const modelDir = adapter ? await mergedCheckpoint(run, step, dir, recipe.model.trainer.python) : dir;
  return {
    recipe: {
      ...recipe,
      model: {
        ...recipe.model,
        path: modelDir,
        ...(tokenizer === undefined ? {} : { tokenizer }),
        ...(chatTemplate === undefined ? {} : { chat_template: chatTemplate }),
      },
    },
    from: { run: run.dir, step, dir: modelDir, merged: adapter },
  };
}

/** The run and checkpoint `path` names, or undefined when it names no run. */
async function sourceCheckpoint(
  path: string,
  runsDir: string,
): Promise<{ run: RunDir; step: number; dir: string } | undefined> {
  if (isAbsolute(path) && existsSync(join(path, CHECKPOINT_MARKER))) {
    const run = await openRunDir(dirname(dirname(path)));
    const step = Number(/step-(\d+)$/.exec(path)?.[1]);
    if (!Number.isInteger(step)) throw new InputError(`model.path ${path}: a checkpoint directory is named step-NNNNN`);
    return { run, step, dir: path };
  }
  let run: RunDir;
  try {
    run = await findRun(path, runsDir);
  } catch (error) {
    // A hub id (Org/Name) or a model directory is no run; a path only a run reference has is one gone wrong.
    if (error instanceof InputError && runShaped(path, runsDir))
      throw new InputError(`model.path ${path}: ${error.message}`, {
        hint: 'run the recipe that makes it first (a warm start), or point model.path at a model directory',
      });
    return undefined;
  }
  const latest = await run.latestCheckpoint();
  if (!latest)
    throw new InputError(`model.path ${path}: run ${run.dir} has no complete checkpoint to start from`, {
      hint: 'let that run finish (it checkpoints at its end), or set its train.save_every',
    });
  return { run, ...latest };
}

/** Whether a path that names no run can only have meant one: it ends in latest or vNNN, or starts in the runs directory. */
function runShaped(path: string, runsDir: string): boolean {
  const parts = path.split('/').filter(Boolean);
  return (
    /^(latest|v\d{3,})$/.test(parts.at(-1) ?? '') ||
    (parts.length >= 2 && (parts[0] === 'runs' || path.startsWith(`${runsDir}/`)))
  );
}

/** The LoRA checkpoint merged into its base, made once under the source run's merged/ directory. */
async function mergedCheckpoint(run: RunDir, step: number, adapterDir: string, python?: string): Promise<string> {
  const out = join(run.dir, 'merged', stepName(step));
  if (existsSync(join(out, 'config.json'))) return out;
  const partial = `${out}.partial-${process.pid}`;
  await rm(partial, { recursive: true, force: true });
  await mkdir(dirname(out), { recursive: true });
  try {
    await mergeLoraAdapter(adapterDir, partial, python);
    await rename(partial, out);
  } finally {
    await rm(partial, { recursive: true, force: true });
  }
  return out;
}
