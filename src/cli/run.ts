import { CancelledError, InputError } from '../errors/index.js';
import type { EvalSummary } from '../run/events.js';
import { formatEvalSummary } from '../ui/progress-lines.js';
import { defineCommand } from './define-command.js';
import { newRecipeRun, reopenRecipeRun, type RecipeRun } from './recipe-run.js';
import { askOnTerminal, isInteractive } from './setup.js';

export interface RunOptions {
  readonly recipe?: string;
  readonly overrides: readonly string[];
  readonly resume?: string;
  /** Take over the writer lock of a run directory held by a process on another host. */
  readonly force?: boolean;
  readonly json: boolean;
  readonly tui: boolean;
  /** Fetch the recipe's built-in data first when it is missing. */
  readonly fetch?: boolean;
}

export const runCommand = defineCommand({
  command: 'run [recipe] [overrides..]',
  describe: 'Train a policy with reinforcement learning from a recipe',
  positionals: {
    recipe: { type: 'string', describe: 'Recipe YAML file' },
    overrides: {
      type: 'string',
      array: true,
      default: [],
      describe: 'key=value overrides, e.g. train.steps=50',
    },
  },
  options: {
    resume: { type: 'string', describe: 'Continue an interrupted run directory from its last checkpoint' },
    force: {
      type: 'boolean',
      default: false,
      describe: 'With --resume: take over the run directory from an atk on another host that is gone',
    },
    json: { type: 'boolean', default: false, describe: 'Print events as JSON lines' },
    fetch: {
      type: 'boolean',
      default: false,
      describe: "Fetch the recipe's built-in data (atk data fetch) first if it is missing",
    },
    tui: {
      type: 'boolean',
      default: true,
      describe: 'Live dashboard on a terminal (--no-tui, CI=true or a pipe give plain lines)',
    },
  },
  examples: [
    ['atk run recipes/quickstart.yaml', 'GRPO on arithmetic with the embedded CPU engine'],
    ['atk run recipes/quickstart.yaml train.steps=20 seed=1', 'The same with overrides'],
    ['atk run --resume runs/quickstart/v003', 'Continue a killed run where its last checkpoint left off'],
  ],
  check: (argv) => (!argv.recipe && !argv.resume ? 'name a recipe, or --resume a run directory' : undefined),
  handler: (argv) => runRun(argv),
});

/**
 * Start or resume a run and print its progress; resolves when the run has finished.
 * @throws ConfigError before anything starts; CancelledError (exit 130) on Ctrl-C; the run's own error otherwise.
 */
export async function runRun(options: RunOptions): Promise<void> {
  const controller = new AbortController();
  const interrupt = (): void => {
    if (controller.signal.aborted) return;
    process.stderr.write(
      '\ninterrupting: stopping episodes and children, the run stays resumable (Ctrl-C again to force)\n',
    );
    controller.abort(new CancelledError());
    // A listener must stay for each signal: execa's exit hook re-raises a signal nobody else listens
    // for, which would kill atk before the run is stopped and marked interrupted.
    process.once('SIGINT', () => process.exit(130));
    process.once('SIGTERM', () => process.exit(143));
  };
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  let opened: RecipeRun | undefined;
  try {
    opened = options.resume
      ? await reopenRecipeRun(options.resume, resumeOverrides(options), { force: options.force ?? false })
      : await newRecipeRun(options.recipe!, options.overrides, '', {
          fetch: options.fetch ?? false,
          print: (line) => process.stdout.write(`${line}\n`),
          trainerPython: {
            interactive: isInteractive(),
            ask: askOnTerminal,
            print: (line) => process.stdout.write(`${line}\n`),
          },
        });
    const { loaded, run } = opened;
    // Imported here so every other command starts without loading the agent and trainer stack.
    const { trainRun } = await import('../run/train-run.js');
    const { renderRunEvents, wantsTui } = await import('../ui/dashboard/index.js');
    const events = trainRun({
      recipe: loaded.recipe,
      recipeDir: loaded.dir,
      recipeFile: loaded.file,
      run,
      resume: Boolean(options.resume),
      signal: controller.signal,
    });
    const state = await renderRunEvents(events, {
      tui: wantsTui(options.tui),
      json: options.json,
      title: `run ${run.name}/${run.version}`,
      concurrency: loaded.recipe.rollout.concurrency,
    });
    if (!options.json)
      printBeforeAfter(
        state.evals.map((e) => e.summary),
        run.dir,
      );
  } finally {
    process.removeListener('SIGINT', interrupt);
    process.removeListener('SIGTERM', interrupt);
    await opened?.run.release();
  }
}

/**
 * The overrides of `atk run --resume DIR key=value ...`: the recipe comes from the run directory,
 * so yargs' first positional (`[recipe]`) is the first override, not a recipe to ignore.
 * @throws InputError when a recipe file is named beside --resume.
 */
export function resumeOverrides(options: Pick<RunOptions, 'recipe' | 'overrides'>): readonly string[] {
  if (options.recipe === undefined) return options.overrides;
  if (!options.recipe.includes('=')) {
    throw new InputError(`--resume reads the recipe from the run directory; not also ${options.recipe}`, {
      hint: 'atk run --resume runs/<name>/<version> [key=value ...]',
    });
  }
  return [options.recipe, ...options.overrides];
}

function printBeforeAfter(evals: readonly EvalSummary[], dir: string): void {
  const first = evals[0];
  const last = evals[evals.length - 1];
  if (!first || !last || first === last) return;
  const delta = (last.accuracy - first.accuracy) * 100;
  process.stdout.write(
    `\nheld-out ${first.split} (${first.tasks} tasks, greedy):\n` +
      `  before  ${formatEvalSummary(first)}\n` +
      `  after   ${formatEvalSummary(last)}\n` +
      `  accuracy ${delta >= 0 ? '+' : ''}${delta.toFixed(1)} points\n` +
      `run directory: ${dir}\n`,
  );
}
