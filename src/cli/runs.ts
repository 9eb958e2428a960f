import { findRun, listRuns, overview, type RunOverview } from '../runs/index.js';
import { renderTable, type TableStyle } from '../ui/table.js';
import { figure, formatDuration } from '../ui/format.js';
import { defineCommand } from './define-command.js';
import { compareCommand } from './runs-compare.js';
import { runsExportCommand } from './runs-export.js';
import { runsDirOption } from './run-options.js';

/** `atk runs ls`: one table row per run under `runsDir`. */
export async function runRunsLs(runsDir: string, style: TableStyle = {}): Promise<string> {
  const runs = await listRuns(runsDir);
  if (runs.length === 0) return `no runs in ${runsDir}\n`;
  const head = ['name', 'version', 'status', 'steps', 'last reward', 'started', 'duration'];
  return `${renderTable(head, runs.map(row), style)}\n`;
}

/**
 * `atk runs show <run>`: one run's manifest and figures.
 * @throws InputError naming the nearest run when `ref` matches none.
 */
export async function runRunsShow(ref: string, runsDir: string, style: TableStyle = {}): Promise<string> {
  const run = await findRun(ref, runsDir);
  const [manifest, facts, metrics, summary, checkpoint] = await Promise.all([
    run.manifest(),
    overview(run),
    run.readMetrics(),
    run.readSummary(),
    run.latestCheckpoint(),
  ]);
  const lines = [
    `run        ${run.dir}`,
    `status     ${facts.status}${manifest.finished_at ? ` (finished ${localTime(manifest.finished_at)})` : ''}`,
    `started    ${localTime(manifest.started_at)}, ${formatDuration(facts.durationS)}`,
    `steps      ${steps(facts)}`,
    `reward     ${facts.lastReward === undefined ? '-' : `${facts.lastReward.toFixed(3)} (last step)`}`,
    `checkpoint ${checkpoint ? `${checkpoint.dir} (after step ${checkpoint.step})` : '-'}`,
    `seed       ${manifest.seed}   recipe sha256 ${manifest.recipe_sha256.slice(0, 12)}`,
    `atk        ${manifest.atk_version}   node ${manifest.node_version}   git ${manifest.git ? `${manifest.git.commit.slice(0, 12)}${manifest.git.dirty ? ' (dirty)' : ''}` : '-'}`,
    `host       ${manifest.host.hostname}: ${manifest.host.os} ${manifest.host.arch}, ${manifest.host.cpus} CPUs, ${(manifest.host.memory_bytes / 2 ** 30).toFixed(1)} GiB`,
  ];
  const evals = metrics.filter((m) => m.kind === 'eval');
  if (evals.length > 0) {
    lines.push('', 'evaluations');
    lines.push(
      renderTable(
        ['step', 'label', 'reward', 'accuracy', 'tasks'],
        evals.map((e) => [
          String(e.step ?? '-'),
          String(e.label ?? '-'),
          figure(e.reward_mean),
          figure(e.accuracy),
          String(e.tasks ?? '-'),
        ]),
        style,
      ),
    );
  }
  if (summary) lines.push('', 'summary', JSON.stringify(summary, null, 2));
  const extra = Object.keys(manifest).filter((k) => !SHOWN.has(k));
  if (extra.length > 0) lines.push('', 'manifest', ...extra.map((k) => `${k}: ${JSON.stringify(manifest[k])}`));
  return `${lines.join('\n')}\n`;
}

const SHOWN = new Set([
  'name',
  'version',
  'status',
  'started_at',
  'updated_at',
  'finished_at',
  'status_history',
  'seed',
  'recipe_sha256',
  'atk_version',
  'node_version',
  'git',
  'host',
  'pid',
]);

function row(run: RunOverview): string[] {
  return [
    run.name,
    run.version,
    run.status,
    steps(run),
    figure(run.lastReward),
    localTime(run.startedAt),
    formatDuration(run.durationS),
  ];
}

function steps(run: RunOverview): string {
  return run.stepsTotal === undefined ? String(run.stepsDone) : `${run.stepsDone}/${run.stepsTotal}`;
}

/** `2025-01-31 14:05` in local time. */
function localTime(iso: string): string {
  const d = new Date(iso);
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}

const lsCommand = defineCommand({
  command: 'ls',
  describe: 'List runs: name, version, status, steps, last reward, start and duration',
  options: { 'runs-dir': runsDirOption },
  examples: [
    ['$0 runs ls', 'every run under ./runs'],
    ['$0 runs ls --runs-dir /data/runs', 'runs elsewhere'],
  ],
  handler: async (args) => {
    process.stdout.write(await runRunsLs(args['runs-dir']));
  },
});

const showCommand = defineCommand({
  command: 'show <run>',
  describe: "Show one run's manifest and figures",
  positionals: {
    run: {
      type: 'string',
      demandOption: true,
      describe: 'name (its newest version), name/v002, name/latest, or a run directory',
    },
  },
  options: { 'runs-dir': runsDirOption },
  examples: [
    ['$0 runs show quickstart', 'the newest quickstart run'],
    ['$0 runs show quickstart/v002', 'one version'],
  ],
  handler: async (args) => {
    process.stdout.write(await runRunsShow(args.run, args['runs-dir']));
  },
});

export const runsCommand = defineCommand({
  command: 'runs <command>',
  describe: 'List and inspect run directories',
  commands: [lsCommand, showCommand, compareCommand, runsExportCommand],
  demandCommand: 'Name a runs command: ls, show, compare or export',
  examples: [
    ['$0 runs ls', 'list runs'],
    ['$0 runs show quickstart', 'show the newest quickstart run'],
  ],
  handler: () => {},
});
