import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { AtkError, CancelledError, InputError } from '../errors/index.js';
import type { EvalSummary } from '../run/events.js';
import { CHECKPOINT_MARKER, stepName, type RunDir } from '../runs/index.js';
import { evalFigures, evalTable } from '../ui/eval-table.js';
import { defineCommand } from './define-command.js';
import { newRecipeRun, reopenRecipeRun, type RecipeRun } from './recipe-run.js';

export interface EvalOptions {
  readonly target: string;
  readonly overrides: readonly string[];
  readonly checkpoint?: string;
  readonly split?: string;
  readonly limit?: number;
  readonly samples: number;
  readonly concurrency?: number;
  readonly temperature: number;
  readonly minScore?: number;
  /** Figure `--min-score` is compared with (a row of the table, e.g. accuracy, reward, pass@4). */
  readonly metric: string;
  readonly baseline?: string;
  readonly resume: boolean;
  readonly label?: string;
  readonly tui: boolean;
  readonly json: boolean;
}

export const evalCommand = defineCommand({
  command: 'eval <recipe-or-run> [overrides..]',
  describe: "Score a model or a run's checkpoint on a split with the same agent loop, tools and reward as training",
  positionals: {
    'recipe-or-run': {
      type: 'string',
      demandOption: true,
      describe: 'Recipe YAML file (its base model), or a run directory (its checkpoints)',
    },
    overrides: { type: 'string', array: true, default: [], describe: 'key=value recipe overrides' },
  },
  options: {
    checkpoint: {
      type: 'string',
      describe: 'base | latest | step-N | <dir> (default: latest for a run, base for a recipe)',
    },
    split: { type: 'string', describe: "Dataset split (default: the recipe's dataset.eval_split)" },
    limit: {
      type: 'number',
      describe: 'Evaluate only the first N tasks (default: dataset.eval_limit on the eval split)',
    },
    samples: { type: 'number', default: 1, describe: 'Samples per task (k of pass@k)' },
    concurrency: { type: 'number', describe: 'Episodes at once (default: rollout.concurrency)' },
    temperature: { type: 'number', default: 0, describe: 'Sampling temperature; 0 = greedy' },
    'min-score': { type: 'number', describe: 'Exit with code 1 when --metric is below this (a CI gate)' },
    metric: {
      type: 'string',
      default: 'accuracy',
      describe:
        'Figure --min-score checks: accuracy, reward, pass@k, tool_calls, tool_error_rate, turns, tokens, failed_episodes',
    },
    baseline: { type: 'string', describe: 'An eval directory (eval/<label>) to compare with' },
    resume: {
      type: 'boolean',
      default: false,
      describe: 'Keep finished episodes of the same eval and run only missing or errored ones',
    },
    label: {
      type: 'string',
      describe: 'Name of the eval directory (default: from the checkpoint and split)',
    },
    tui: {
      type: 'boolean',
      default: true,
      describe: 'Live dashboard on a terminal (--no-tui for plain lines)',
    },
    json: { type: 'boolean', default: false, describe: 'Print events and the summary as JSON lines' },
  },
  examples: [
    ['$0 eval runs/quickstart/v001', "the run's newest checkpoint on the held-out split"],
    ['$0 eval recipes/quickstart.yaml --limit 50 --samples 4', 'the base model, pass@1..4 on 50 tasks'],
    [
      '$0 eval runs/quickstart/v001 --baseline runs/quickstart/v001/eval/base --min-score 0.6',
      'gate CI on accuracy, against a baseline',
    ],
  ],
  handler: async (argv) => {
    const result = await runEval({ ...argv, target: argv.recipeOrRun });
    process.stdout.write(result.text);
  },
});

/**
 * `atk eval`: resolve the target and checkpoint, evaluate (dashboard or plain lines), and return the
 * table to print.
 * @throws AtkError (exit 1) when `--min-score` is not met; InputError for a bad target, checkpoint or
 * baseline; ConfigError for an invalid recipe; CancelledError on Ctrl-C.
 */
export async function runEval(
  options: EvalOptions,
): Promise<{ readonly summary: EvalSummary; readonly dir: string; readonly text: string }> {
  const baseline = options.baseline ? await readBaseline(options.baseline) : undefined;
  const { loaded, run, isRun } = await evalTarget(options.target, options.overrides);
  const controller = new AbortController();
  const interrupt = (): void => controller.abort(new CancelledError());
  process.once('SIGINT', interrupt);
  try {
    // Inside the try: a recipe target's fresh run directory is marked failed when its checkpoint is bad.
    const checkpoint = await resolveCheckpoint(run, options.checkpoint ?? (isRun ? 'latest' : 'base'));
    const split = options.split ?? loaded.recipe.dataset.eval_split;
    const defaultLabel = `${checkpoint ? stepName(checkpoint.step) : 'base'}${split === loaded.recipe.dataset.eval_split ? '' : `-${split}`}`;
    // The default label of a checkpoint is also its in-training eval's: take the next free name rather
    // than overwrite those results (--resume continues the existing directory on purpose).
    const label = options.label ?? (options.resume ? defaultLabel : unusedLabel(run.evalDir, defaultLabel));
    const outDir = join(run.evalDir, label);
    // Imported here so every other command starts without loading the agent and trainer stack.
    const { evalRun } = await import('../run/eval-run.js');
    const { renderRunEvents, wantsTui } = await import('../ui/dashboard/index.js');
    const events = evalRun({
      recipe: loaded.recipe,
      recipeDir: loaded.dir,
      recipeFile: loaded.file,
      runDir: run.dir,
      logsDir: run.logsDir,
      outDir,
      label,
      ...(checkpoint ? { checkpoint } : {}),
      split,
      ...(options.limit ? { limit: options.limit } : {}),
      samples: options.samples,
      concurrency: options.concurrency ?? loaded.recipe.rollout.concurrency,
      temperature: options.temperature,
      resume: options.resume,
      signal: controller.signal,
    });
    const state = await renderRunEvents(events, {
      tui: wantsTui(options.tui),
      json: options.json,
      title: `eval ${label}`,
      concurrency: options.concurrency ?? loaded.recipe.rollout.concurrency,
    });
    const summary = state.evals[state.evals.length - 1]?.summary;
    if (!summary) throw new CancelledError('eval interrupted');
    if (isRun) await run.appendMetrics({ kind: 'eval', step: checkpoint?.step ?? 0, ...summary });
    const text = options.json
      ? `${JSON.stringify({ summary, baseline: baseline ?? null, dir: outDir })}\n`
      : `\n${evalTable(summary, baseline)}\nresults: ${outDir}\n`;
    if (!isRun) await run.setStatus('finished');
    checkMinScore(summary, options.metric, options.minScore);
    return { summary, dir: outDir, text };
  } catch (error) {
    if (!isRun) await run.setStatus(controller.signal.aborted ? 'interrupted' : 'failed');
    throw error;
  } finally {
    process.removeListener('SIGINT', interrupt);
    await run.release();
  }
}

/**
 * The checkpoint a `--checkpoint` value names: `base` (none), `latest` (the newest complete one),
 * `step-N` (the one taken after N steps), or a checkpoint directory.
 * @throws InputError naming the checkpoints there are.
 */
export async function resolveCheckpoint(
  run: RunDir,
  spec: string,
): Promise<{ readonly dir: string; readonly step: number } | undefined> {
  if (spec === 'base') return undefined;
  if (spec === 'latest') {
    const latest = await run.latestCheckpoint();
    if (!latest)
      throw new InputError(`${run.dir} has no complete checkpoint`, {
        hint: 'use --checkpoint base to evaluate the model the recipe starts from',
      });
    return latest;
  }
  const step = /^step-(\d+)$/.exec(spec);
  if (step) {
    const dir = run.checkpointDir(Number(step[1]));
    if (existsSync(join(dir, CHECKPOINT_MARKER))) return { dir, step: Number(step[1]) };
    const latest = await run.latestCheckpoint();
    throw new InputError(`${run.dir} has no complete checkpoint ${stepName(Number(step[1]))}`, {
      hint: latest ? `the newest is ${stepName(latest.step)} (--checkpoint latest)` : 'this run has no checkpoints',
    });
  }
  const dir = resolve(spec);
  if (!(await stat(dir).catch(() => undefined))?.isDirectory())
    throw new InputError(`--checkpoint ${spec}: not base, latest, step-N or a directory`);
  const marker = await readFile(join(dir, CHECKPOINT_MARKER), 'utf8').then(
    (t) => JSON.parse(t) as { step?: unknown },
    () => undefined,
  );
  return { dir, step: typeof marker?.step === 'number' ? marker.step : 0 };
}

/** @throws AtkError (exit 1) when the figure named `metric` is below `minScore`. */
export function checkMinScore(summary: EvalSummary, metric: string, minScore: number | undefined): void {
  if (minScore === undefined) return;
  const figures = new Map(evalFigures(summary).map(([, v, key]) => [key, v]));
  const value = figures.get(metric);
  if (value === undefined)
    throw new InputError(`--metric ${metric}: not a figure of this eval`, {
      hint: `one of ${[...figures.keys()].join(', ')}`,
    });
  if (value < minScore)
    throw new AtkError(
      'E_MIN_SCORE',
      `eval ${summary.label}: ${metric} ${value.toFixed(3)} is below --min-score ${minScore}`,
      1,
      { hint: 'the eval ran; its results are in the table above and in results.jsonl' },
    );
}

/** A run directory (its resolved recipe), or a recipe file (a fresh `<name>-eval` directory). */
async function evalTarget(
  target: string,
  overrides: readonly string[],
): Promise<RecipeRun & { readonly isRun: boolean }> {
  if (existsSync(join(target, 'manifest.json'))) return { ...(await reopenRecipeRun(target, overrides)), isRun: true };
  return { ...(await newRecipeRun(target, overrides, '-eval')), isRun: false };
}

async function readBaseline(dir: string): Promise<EvalSummary> {
  const file = dir.endsWith('.json') ? dir : join(dir, 'summary.json');
  try {
    return JSON.parse(await readFile(file, 'utf8')) as EvalSummary;
  } catch {
    throw new InputError(`--baseline ${dir}: no readable summary.json`, {
      hint: 'name an eval directory, e.g. runs/quickstart/v001/eval/base',
    });
  }
}

/** `label`, or `label-2`, `label-3`, ... : the first that has no directory under `evalDir` yet. */
export function unusedLabel(evalDir: string, label: string): string {
  for (let n = 1; ; n++) {
    const candidate = n === 1 ? label : `${label}-${n}`;
    if (!existsSync(join(evalDir, candidate))) return candidate;
  }
}
