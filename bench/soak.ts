// A long quickstart run watched for leaks (docs/reliability.md): recipes/quickstart.yaml with
// rollout.max_staleness 1, rollout.workers 2, an eval every 100 steps, a checkpoint every 50 (kept as
// train.keep_checkpoints says) and the default train.keep_trajectories. Every few seconds it samples atk's
// and the trainer's resident memory, open descriptors and threads (/proc), atk's JS heap (the
// atk/heap_used_mb figure of the newest metrics line), atk's child processes and the run directory's size;
// at the end it prints each figure's least-squares slope per 100 steps after warm-up and exits 1 when
// memory, descriptors, threads or children grow faster than the limits below.
//   npm run bench soak                          1,000 steps (100 within npm run bench, every benchmark)
//   npx tsx bench/soak.ts --minutes 35          stop after 35 minutes of training (train.time_budget_s)
//   npx tsx bench/soak.ts --steps 200 --every 5 --warmup 50 --keep   (--every: seconds between samples, default 1)
//   ... --set train.tasks_per_step=2 --set algorithm.group_size=4   smaller steps: more of them on a busy machine
//   npx tsx bench/soak.ts --samples DIR/samples.json --warmup 40    the figures of a kept soak again
// Limits, per 100 steps after warm-up (100 steps = 12,800 episodes): atk's heap 8 MiB (one retained object of
// ~650 bytes per episode), atk's and the trainer's RSS 24 MiB (allocator and GC noise on top of the heap),
// 2 descriptors, threads or children (one leaked per eval or checkpoint shows; transient sockets do not).
import { spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { readMetricsTail } from '../src/runs/metrics.js';
import { projectRoot } from '../src/util/paths.js';
import { type SoakFigure, type SoakSample, soakRows } from './lib/soak-slopes.js';

const { values: args } = parseArgs({
  options: {
    steps: { type: 'string', default: '1000' },
    minutes: { type: 'string' },
    // Each 10-step window needs samples of its own for its floor: at ~2 steps/s (small steps, a quiet machine) one
    // sample every 5 s put a whole eval's sockets into the later-half slope and failed a flat run.
    every: { type: 'string', default: '1' },
    warmup: { type: 'string' },
    keep: { type: 'boolean', default: false },
    set: { type: 'string', multiple: true, default: [] },
    samples: { type: 'string' },
  },
});
// Within `npm run bench` (every benchmark) a soak of hours would hold up the rest: 100 steps there.
const STEPS = Number(process.env.ATK_BENCH_ALL === '1' && !process.argv.includes('--steps') ? 100 : args.steps);
const WARMUP = Number(args.warmup ?? Math.min(100, Math.max(20, Math.round(STEPS / 10))));
const KEEP_TRAJECTORIES = 100; // the schema's default train.keep_trajectories: {last: 100}

const FIGURES: readonly SoakFigure[] = [
  { name: 'atk_rss_mib', unit: 'MiB', limitPer100Steps: 24 },
  { name: 'atk_heap_mib', unit: 'MiB', limitPer100Steps: 8 },
  { name: 'atk_fds', unit: '', limitPer100Steps: 2 },
  { name: 'atk_threads', unit: '', limitPer100Steps: 2 },
  { name: 'atk_children', unit: '', limitPer100Steps: 2 },
  { name: 'trainer_rss_mib', unit: 'MiB', limitPer100Steps: 24 },
  { name: 'trainer_fds', unit: '', limitPer100Steps: 2 },
  { name: 'trainer_threads', unit: '', limitPer100Steps: 2 },
  // Grows until the trajectory window is full; after it, by metrics lines, evals and logs only.
  { name: 'run_dir_mib', unit: 'MiB', fromStep: KEEP_TRAJECTORIES + 1 },
  { name: 'trajectory_files', unit: '', fromStep: KEEP_TRAJECTORIES + 1 },
];

if (args.samples) {
  const kept = JSON.parse(readFileSync(args.samples, 'utf8')) as SoakSample[];
  process.exit(report(kept, 0, 0) ? 0 : 1);
}

const runsDir = mkdtempSync(join(tmpdir(), 'atk-bench-soak-'));
const overrides = [
  `output.runs_dir=${runsDir}`,
  `train.steps=${STEPS}`,
  'rollout.max_staleness=1',
  'rollout.workers=2',
  'train.eval_every=100',
  'train.save_every=50',
  ...(args.minutes ? [`train.time_budget_s=${Number(args.minutes) * 60}`] : []),
  ...args.set,
];
console.log(`soak: atk run recipes/quickstart.yaml ${overrides.join(' ')}`);
console.log(`soak: sampling every ${args.every} s; slopes after step ${WARMUP}; atk's output in ${runsDir}/atk.log`);
const log = createWriteStream(join(runsDir, 'atk.log'));
const atk = spawn(
  'node',
  [join(projectRoot(), 'bin', 'atk'), 'run', 'recipes/quickstart.yaml', ...overrides, '--no-tui'],
  {
    cwd: projectRoot(),
    stdio: ['ignore', 'pipe', 'pipe'],
  },
);
atk.stdout.pipe(log);
atk.stderr.pipe(log);
process.on('SIGINT', () => atk.kill('SIGINT'));
const exited = new Promise<number>((resolve) => atk.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));

const samples: SoakSample[] = [];
const started = Date.now();
let lastReported = 0;
const timer = setInterval(() => {
  void sample().then((s) => {
    if (!s) return;
    samples.push(s);
    if (s.step >= lastReported + 50) {
      lastReported = s.step;
      const v = s.values;
      console.log(
        `soak: step ${s.step} at ${((Date.now() - started) / 60_000).toFixed(1)} min: atk ${v.atk_rss_mib?.toFixed(0)} MiB (heap ${v.atk_heap_mib?.toFixed(0)}), trainer ${v.trainer_rss_mib?.toFixed(0)} MiB, fds ${v.atk_fds}/${v.trainer_fds}, run dir ${v.run_dir_mib?.toFixed(1)} MiB`,
      );
    }
  });
}, Number(args.every) * 1000);
const code = await exited;
clearInterval(timer);
const flat = report(samples, code, (Date.now() - started) / 60_000);
const runDir = versionDir();
if (runDir) console.log(`soak: run directory at the end: ${composition(runDir)}`);
if (args.keep) {
  writeFileSync(join(runsDir, 'samples.json'), JSON.stringify(samples));
  console.log(`soak: kept ${runsDir} (samples.json, atk.log, the run)`);
} else rmSync(runsDir, { recursive: true, force: true });
process.exit(flat ? 0 : 1);

/** Prints each figure's slopes and the verdict; returns whether memory and descriptors stayed flat. */
function report(samples: readonly SoakSample[], code: number, minutes: number): boolean {
  // The samples after training's last step are the final eval's: its sockets and threads are no step's floor.
  const last = samples.at(-1)?.step ?? 0;
  const trained = samples.filter((s, i) => s.step < last || samples[i - 1]?.step !== last);
  const rows = soakRows(trained, FIGURES, WARMUP);
  console.log(`soak: atk exited ${code} after ${last} steps in ${minutes.toFixed(1)} min; ${samples.length} samples`);
  const fmt = (x: number | undefined, digits = 1): string => (x === undefined ? '-' : x.toFixed(digits));
  console.log(`slopes per 100 steps after step ${WARMUP}, and over the later half of those steps (the verdict)`);
  console.log('figure             start      end      slope  later half  unit  limit');
  for (const r of rows)
    console.log(
      `${r.name.padEnd(16)} ${fmt(r.start).padStart(7)} ${fmt(r.end).padStart(8)} ${fmt(r.slopePer100Steps, 2).padStart(10)} ${fmt(r.lateSlopePer100Steps, 2).padStart(11)}  ${r.unit.padEnd(4)} ${r.limitPer100Steps === undefined ? '' : `${r.limitPer100Steps}`.padStart(5)}${r.ok ? '' : '  GROWS'}`,
    );
  const trajectories = samples.at(-1)?.values.trajectory_files ?? 0;
  const bounded = trajectories <= KEEP_TRAJECTORIES;
  if (!bounded)
    console.log(`soak: ${trajectories} trajectory files, more than train.keep_trajectories' ${KEEP_TRAJECTORIES}`);
  const unmeasured = rows.filter((r) => r.limitPer100Steps !== undefined && r.lateSlopePer100Steps === undefined);
  if (unmeasured.length)
    console.log(`soak: too few samples after step ${WARMUP} to measure ${unmeasured.map((r) => r.name).join(', ')}`);
  const flat = code === 0 && bounded && unmeasured.length === 0 && rows.every((r) => r.ok);
  console.log(flat ? 'soak: flat' : 'soak: FAILED');
  return flat;
}

/** One sample of every figure; undefined until the run directory and atk's process exist. */
async function sample(): Promise<SoakSample | undefined> {
  const dir = versionDir();
  if (!dir || atk.pid === undefined) return undefined;
  const tree = processTree();
  // Under Node < 22 bin/atk re-runs itself as a child: atk is the deepest process running bin/atk.
  const atkPid = [atk.pid, ...descendants(tree, atk.pid)].filter((p) => cmdline(p).includes('bin/atk')).at(-1);
  if (atkPid === undefined) return undefined;
  const children = descendants(tree, atkPid);
  const trainerPid = children.find((p) => cmdline(p).includes('atk_trainer'));
  const train = (await readMetricsTail(join(dir, 'metrics.jsonl'), 3)).filter((l) => l.kind === 'train').at(-1);
  const atkStatus = status(atkPid);
  const trainerStatus = trainerPid === undefined ? undefined : status(trainerPid);
  return {
    step: typeof train?.step === 'number' ? train.step : 0,
    values: {
      atk_rss_mib: atkStatus?.rssMib,
      atk_heap_mib: typeof train?.['atk/heap_used_mb'] === 'number' ? train['atk/heap_used_mb'] : undefined,
      atk_fds: fds(atkPid),
      atk_threads: atkStatus?.threads,
      atk_children: children.length,
      trainer_rss_mib: trainerStatus?.rssMib,
      trainer_fds: trainerPid === undefined ? undefined : fds(trainerPid),
      trainer_threads: trainerStatus?.threads,
      run_dir_mib: treeBytes(dir) / 2 ** 20,
      trajectory_files: readdirSync(join(dir, 'trajectories')).length,
    },
  };
}

function versionDir(): string | undefined {
  const dir = join(runsDir, 'quickstart', 'v001');
  return statSync(join(dir, 'metrics.jsonl'), { throwIfNoEntry: false }) ? dir : undefined;
}

/** Parent pid -> child pids, from /proc/<pid>/stat. */
function processTree(): Map<number, number[]> {
  const tree = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readProc(`/proc/${name}/stat`);
    // The command name is in parentheses and may hold spaces: the parent pid is the second field after it.
    const ppid = stat === undefined ? NaN : Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (!Number.isNaN(ppid)) tree.set(ppid, [...(tree.get(ppid) ?? []), Number(name)]);
  }
  return tree;
}

function descendants(tree: Map<number, number[]>, pid: number): number[] {
  const out: number[] = [];
  for (const child of tree.get(pid) ?? []) out.push(child, ...descendants(tree, child));
  return out;
}

function cmdline(pid: number): string {
  return (readProc(`/proc/${pid}/cmdline`) ?? '').replaceAll('\0', ' ');
}

function status(pid: number): { rssMib: number; threads: number } | undefined {
  const text = readProc(`/proc/${pid}/status`);
  const field = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(text ?? '')?.[1]);
  return text === undefined ? undefined : { rssMib: field('VmRSS') / 1024, threads: field('Threads') };
}

function fds(pid: number): number | undefined {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return undefined;
  }
}

function readProc(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined; // the process ended between listing and reading
  }
}

function treeBytes(dir: string): number {
  let bytes = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    bytes += statSync(join(entry.parentPath, entry.name), { throwIfNoEntry: false })?.size ?? 0;
  }
  return bytes;
}

/** Bytes per top-level part of the run directory. */
function composition(dir: string): string {
  return readdirSync(dir, { withFileTypes: true })
    .map((e) => {
      const path = join(dir, e.name);
      const bytes = e.isDirectory() ? treeBytes(path) : (statSync(path, { throwIfNoEntry: false })?.size ?? 0);
      return `${e.name} ${(bytes / 2 ** 20).toFixed(2)} MiB`;
    })
    .join(', ');
}
