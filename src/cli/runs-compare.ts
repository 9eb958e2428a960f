import { findRun, overview, type MetricsLine } from '../runs/index.js';
import { renderTable, type TableStyle } from '../ui/table.js';
import { figure, formatDuration } from '../ui/format.js';
import { defineCommand } from './define-command.js';
import { runsDirOption } from './run-options.js';

/** The figures compared, by metrics.jsonl key: training lines, then evals. */
const TRAIN_FIGURES = ['reward_mean', 'accuracy', 'response_tokens_mean', 'tool_error_rate'] as const;
const EVAL_FIGURES = ['accuracy', 'reward_mean'] as const;

/**
 * `atk runs compare <run> <run> ...`: one column per run; rows of final and best figures of training
 * and evaluation (best with the step it was reached at), steps, status and duration.
 * @throws InputError naming the nearest run when a reference matches none.
 */
export async function runRunsCompare(
  refs: readonly string[],
  runsDir: string,
  style: TableStyle = {},
): Promise<string> {
  const runs = await Promise.all(refs.map((ref) => findRun(ref, runsDir)));
  const facts = await Promise.all(
    runs.map(async (run) => ({ overview: await overview(run), metrics: await run.readMetrics() })),
  );
  const head = ['', ...facts.map((f) => `${f.overview.name}/${f.overview.version}`)];
  const rows: string[][] = [
    ['status', ...facts.map((f) => f.overview.status)],
    [
      'steps',
      ...facts.map((f) =>
        f.overview.stepsTotal === undefined
          ? String(f.overview.stepsDone)
          : `${f.overview.stepsDone}/${f.overview.stepsTotal}`,
      ),
    ],
    ['duration', ...facts.map((f) => formatDuration(f.overview.durationS))],
  ];
  for (const key of TRAIN_FIGURES) {
    const lowerIsBetter = key === 'tool_error_rate' || key === 'response_tokens_mean';
    rows.push([`${key} final`, ...facts.map((f) => finalOf(train(f.metrics), key))]);
    if (!lowerIsBetter) rows.push([`${key} best`, ...facts.map((f) => bestOf(train(f.metrics), key))]);
  }
  for (const key of EVAL_FIGURES) {
    rows.push([`eval ${key} final`, ...facts.map((f) => finalOf(evals(f.metrics), key))]);
    rows.push([`eval ${key} best`, ...facts.map((f) => bestOf(evals(f.metrics), key))]);
  }
  const passKeys = [...new Set(facts.flatMap((f) => Object.keys(passAtK(evals(f.metrics).at(-1)))))];
  for (const k of passKeys)
    rows.push([`eval ${k} final`, ...facts.map((f) => figure(passAtK(evals(f.metrics).at(-1))[k]))]);
  return `${renderTable(head, rows, style)}\n`;
}

function train(metrics: readonly MetricsLine[]): MetricsLine[] {
  return metrics.filter((m) => m.kind === 'train' || m.kind === undefined);
}

function evals(metrics: readonly MetricsLine[]): MetricsLine[] {
  return metrics.filter((m) => m.kind === 'eval');
}

function finalOf(lines: readonly MetricsLine[], key: string): string {
  const last = [...lines].reverse().find((l) => typeof l[key] === 'number');
  return last ? `${figure(last[key])} @${stepLabel(last)}` : '-';
}

function bestOf(lines: readonly MetricsLine[], key: string): string {
  let best: MetricsLine | undefined;
  for (const l of lines)
    if (typeof l[key] === 'number' && (best === undefined || (l[key] as number) > (best[key] as number))) best = l;
  return best ? `${figure(best[key])} @${stepLabel(best)}` : '-';
}

/** Train and eval lines both count steps done (1-based; an eval at 0 is before training). */
function stepLabel(line: MetricsLine): string {
  if (typeof line.step !== 'number') return '?';
  return String(line.step);
}

function passAtK(line: MetricsLine | undefined): Record<string, unknown> {
  const value = line?.pass_at_k;
  return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {};
}

/** The `compare` subcommand of `atk runs`. */
export const compareCommand = defineCommand({
  command: 'compare <runs..>',
  describe: 'Final and best figures of several runs side by side',
  positionals: {
    runs: {
      type: 'string',
      array: true,
      demandOption: true,
      default: undefined, // not yargs' [] for a variadic positional, which --help would print beside [required]
      describe: 'Runs: directories, names (newest version) or name/v002',
    },
  },
  options: { 'runs-dir': runsDirOption },
  examples: [
    ['$0 runs compare quickstart/v001 quickstart/v002', 'two versions of a recipe'],
    ['$0 runs compare runs/a/v001 runs/b/v003', 'runs given by directory'],
  ],
  handler: async (args) => {
    process.stdout.write(await runRunsCompare(args.runs, args['runs-dir']));
  },
});
