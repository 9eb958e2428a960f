// The quickstart task at the same steps for each algorithm atk has (and distill, from a quickstart checkpoint the
// bench trains first), a few seeds each: a table of held-out gain over the base model, wall time and samples used.
// A variant whose algorithm this atk does not know yet is listed as such, so the list can run ahead of the schema.
//   npm run bench algorithms
//   ATK_BENCH_ALGO_STEPS=3 ATK_BENCH_ALGO_SEEDS=0,1,2 ATK_BENCH_ALGO_ONLY=grpo,distill ...   a subset
//   ATK_BENCH_TEACHER=<dir>    a teacher atk export already wrote (else one is trained: quickstart, 6 steps)
// Then Hugging Face TRL's GRPOTrainer and atk side by side on the task's first turn (bench/lib/trl-peer.ts; seed
// the first of ATK_BENCH_ALGO_SEEDS, `trl` in ATK_BENCH_ALGO_ONLY picks it alone).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectRoot } from '../src/util/paths.js';
import { quickstartFirstTurn, trlPeer } from './lib/trl-peer.js';

/** One row of the table: an algorithm as recipe overrides. A name the schema does not know yet is skipped. */
interface Variant {
  readonly label: string;
  readonly overrides: readonly string[];
}

const VARIANTS: readonly Variant[] = [
  { label: 'grpo', overrides: ['algorithm.name=grpo'] },
  { label: 'dr_grpo', overrides: ['algorithm.name=dr_grpo'] },
  { label: 'gspo', overrides: ['algorithm.name=gspo'] },
  { label: 'cispo', overrides: ['algorithm.name=cispo'] },
  { label: 'grpo+dynamic', overrides: ['algorithm.name=grpo', 'algorithm.dynamic_sampling={max_rounds: 3}'] },
  { label: 'distill', overrides: ['algorithm.name=distill'] },
];

const root = projectRoot();
const atk = join(root, 'bin', 'atk');
const steps = Number(process.env.ATK_BENCH_ALGO_STEPS ?? 3);
const seeds = (process.env.ATK_BENCH_ALGO_SEEDS ?? '0,1,2').split(',').map(Number);
const only = process.env.ATK_BENCH_ALGO_ONLY?.split(',');
/** Shared by every run: what makes them comparable (the quickstart's model, task, reward, group size, rate). */
const TASKS_PER_STEP = 8;
const GROUP_SIZE = 8;
const LEARNING_RATE = 2e-4;
const EVAL_TASKS = 100;
const common = [
  `train.steps=${steps}`,
  `train.tasks_per_step=${TASKS_PER_STEP}`,
  `algorithm.group_size=${GROUP_SIZE}`,
  `algorithm.learning_rate=${LEARNING_RATE}`,
  `dataset.eval_limit=${EVAL_TASKS}`,
  'train.eval_before=false',
  'train.eval_every=0',
];
const work = mkdtempSync(join(tmpdir(), 'atk-bench-algorithms-'));
// Removed however the bench ends (a failed run throws).
process.on('exit', () => rmSync(work, { recursive: true, force: true }));

interface RunFigures {
  readonly accuracy: number;
  readonly seconds: number;
  readonly samples: number;
}

/** One atk run of the quickstart with `overrides`; its final held-out accuracy, wall time and episodes sampled. */
function atkRun(name: string, overrides: readonly string[]): RunFigures | string {
  const runsDir = join(work, name);
  const started = performance.now();
  const result = spawnSync(
    'node',
    [atk, 'run', 'recipes/quickstart.yaml', `output.runs_dir=${runsDir}`, `name=${name}`, ...overrides, '--no-tui'],
    { cwd: root, encoding: 'utf8' },
  );
  const seconds = (performance.now() - started) / 1000;
  if (result.status !== 0) return (result.stderr || result.stdout).trim().split('\n')[0] ?? `exit ${result.status}`;
  const runDir = join(
    runsDir,
    name,
    readdirSync(join(runsDir, name))
      .filter((v) => /^v\d+$/.test(v))
      .sort()
      .at(-1)!,
  );
  const lines = readFileSync(join(runDir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, number | string>);
  const evalLine = lines.filter((l) => l.kind === 'eval').at(-1);
  const samples = lines
    .filter((l) => l.kind === 'train')
    .reduce((a, l) => a + Number(l['dynamic_sampling/groups_sampled'] ?? l.groups) * GROUP_SIZE, 0);
  return { accuracy: Number(evalLine?.accuracy ?? Number.NaN), seconds, samples };
}

/** The base model's held-out accuracy: every run starts from it and evaluates the same greedy tasks. */
function baseAccuracy(): number {
  const result = spawnSync(
    'node',
    [
      atk,
      'eval',
      'recipes/quickstart.yaml',
      `output.runs_dir=${join(work, 'base-eval')}`,
      '--limit',
      String(EVAL_TASKS),
      '--json',
      '--no-tui',
    ],
    { cwd: root, encoding: 'utf8' },
  );
  if (result.status !== 0) throw new Error(`base eval failed: ${result.stderr}`);
  const figures = result.stdout
    .trim()
    .split('\n')
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    })
    .map((event) => (event.summary ?? event) as { accuracy?: number })
    .filter((summary) => typeof summary.accuracy === 'number');
  return figures.at(-1)!.accuracy!;
}

/** A quickstart checkpoint exported as a model directory, the distill runs' teacher. */
function teacherDir(): string {
  if (process.env.ATK_BENCH_TEACHER) return process.env.ATK_BENCH_TEACHER;
  const runsDir = join(work, 'teacher-runs');
  const run = spawnSync(
    'node',
    [
      atk,
      'run',
      'recipes/quickstart.yaml',
      `output.runs_dir=${runsDir}`,
      'train.steps=6',
      'train.eval_after=false',
      'train.eval_before=false',
      '--no-tui',
    ],
    { cwd: root, encoding: 'utf8' },
  );
  if (run.status !== 0) throw new Error(`teacher run failed: ${run.stderr}`);
  const dir = join(work, 'teacher');
  spawnSync('node', [atk, 'export', join(runsDir, 'quickstart', 'v001'), dir], { cwd: root, encoding: 'utf8' });
  return dir;
}

const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
const pct = (x: number): string => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}`;

const variants = VARIANTS.filter((variant) => !only || only.includes(variant.label));
/** Each variant's seeds, then the table. */
function algorithmTable(): void {
  const base = baseAccuracy();
  console.log(`algorithms: base model held-out accuracy ${(100 * base).toFixed(1)}% (${EVAL_TASKS} tasks, greedy)`);
  const known = spawnSync('node', [atk, 'schema'], { cwd: root, encoding: 'utf8' }).stdout;
  const rows: string[] = [];
  for (const variant of variants) {
    const name = variant.overrides[0]!.split('=')[1]!;
    if (!known.includes(`"${name}"`)) {
      rows.push(`| ${variant.label} | not in this atk yet | | | |`);
      continue;
    }
    const extra = variant.label === 'distill' ? [`teacher={path: ${teacherDir()}}`] : [];
    const runs = seeds.map((seed) =>
      atkRun(`${variant.label.replace('+', '-')}-s${seed}`, [
        ...common,
        ...variant.overrides,
        ...extra,
        `seed=${seed}`,
      ]),
    );
    const failed = runs.find((r): r is string => typeof r === 'string');
    if (failed) {
      rows.push(`| ${variant.label} | failed: ${failed} | | | |`);
      continue;
    }
    const ok = runs as RunFigures[];
    const gains = ok.map((r) => r.accuracy - base);
    const figures = {
      gain: mean(gains),
      seconds: mean(ok.map((r) => r.seconds)),
      samples: mean(ok.map((r) => r.samples)),
    };
    rows.push(
      `| ${variant.label} | ${pct(figures.gain)} (${gains.map(pct).join(' / ')}) | ${figures.seconds.toFixed(0)} | ${figures.samples.toFixed(0)} | ${(figures.samples / figures.seconds).toFixed(1)} |`,
    );
    console.log(rows.at(-1));
  }

  console.log(
    `\nquickstart task, ${steps} steps x ${TASKS_PER_STEP} tasks x ${GROUP_SIZE} episodes, lr ${LEARNING_RATE}, seeds ${seeds.join(', ')}; gain over the base model's ${(100 * base).toFixed(1)}% on ${EVAL_TASKS} held-out tasks (greedy)\n`,
  );
  console.log('| algorithm | held-out gain, points (mean; per seed) | wall s per run | samples per run | samples/s |');
  console.log('| --- | --- | --- | --- | --- |');
  for (const row of rows) console.log(row);
}

if (variants.length > 0) algorithmTable();

if (!only || only.includes('trl')) {
  const peer = trlPeer(
    {
      root,
      work,
      steps,
      tasksPerStep: TASKS_PER_STEP,
      groupSize: GROUP_SIZE,
      learningRate: LEARNING_RATE,
      evalTasks: EVAL_TASKS,
      seed: seeds[0]!,
    },
    quickstartFirstTurn(root),
  );
  console.log(`\n${typeof peer === 'string' ? peer : peer.report}`);
}
