// atk view and atk inspect-trajectory on run directories a days-long run leaves (docs/runs.md): a synthetic
// "long" run (100,000-step metrics.jsonl, 10,000 trajectory files of 10 episodes) and a "wide" one (1,000
// steps x 100 episodes, each task in every step), built in a temporary directory that is removed after.
// Each figure is measured in a process of its own (its time and peak RSS), next to the path it replaced
// or a whole-file read as the baseline:
//   time to the first metrics page     /api/metrics from a fresh catalog  vs  every line read into objects
//   time to open one trajectory        /api/episode and atk inspect-trajectory --step --episode  vs  reading that step file whole
//   following a task across 1,000 steps  /api/task  vs  indexing every step file (what /api/task did)
// Sizes: RUN_DIR_BENCH_METRICS, RUN_DIR_BENCH_FILES, RUN_DIR_BENCH_WIDE_STEPS. Timing never fails the run.
import { execFileSync } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runInspectTrajectory } from '../src/cli/inspect-trajectory.js';
import { createRunDir, readMetricsFile } from '../src/runs/index.js';
import { projectRoot } from '../src/util/paths.js';
import { answerApi, metricColumns } from '../src/view/api.js';
import { EpisodeTokenViews } from '../src/view/episode-tokens.js';
import { RunCatalog } from '../src/view/run-catalog.js';
import { episode, metrics } from './lib/synthetic-run.js';

const METRIC_LINES = Number(process.env.RUN_DIR_BENCH_METRICS ?? 100_000);
const FILES = Number(process.env.RUN_DIR_BENCH_FILES ?? 10_000);
const WIDE_STEPS = Number(process.env.RUN_DIR_BENCH_WIDE_STEPS ?? 1000);
const FOLLOWED = String(episode(1, 0).task_id);

/** What one measuring process does: a note, and its own time when not all of it counts; it prints {ms, peakMib, note}. */
const MEASURES: Record<string, (dir: string) => Promise<string | { note: string; ms: number }>> = {
  'metrics page': async (dir) => {
    const { catalog, id } = await catalogOf(dir, 'long');
    const { body } = await answerApi('metrics', params({ run: id }), catalog, tokens());
    return `${(body as { train: { steps: number[] } }).train.steps.length} training points`;
  },
  'metrics, every line': async (dir) => {
    const lines = await readMetricsFile(join(dir, 'runs', 'long', 'v001', 'metrics.jsonl'));
    const columns = metricColumns(lines.filter((l) => l.kind !== 'eval'));
    return `${columns.steps.length} training points`;
  },
  'episode via atk view': async (dir) => {
    const { catalog, id } = await catalogOf(dir, 'long');
    const step = `step-${String(Math.ceil(FILES / 2)).padStart(5, '0')}`;
    // The server opens its catalog once, at start (the metrics page's figure); an episode is read after.
    const t = performance.now();
    const { status } = await answerApi('episode', params({ run: id, source: step, index: '3' }), catalog, tokens());
    return { note: `status ${status}, once the catalog is open`, ms: performance.now() - t };
  },
  'episode via atk inspect-trajectory': async (dir) => {
    const text = await runInspectTrajectory({
      path: join(dir, 'runs', 'long', 'v001'),
      step: Math.ceil(FILES / 2),
      episode: 3,
      color: false,
    });
    return `${text.split('\n').length} lines printed`;
  },
  'that step file read whole': async (dir) => {
    const file = join(
      dir,
      'runs',
      'long',
      'v001',
      'trajectories',
      `step-${String(Math.ceil(FILES / 2)).padStart(5, '0')}.jsonl`,
    );
    return `${
      readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l)).length
    } episodes`;
  },
  'task via atk view': async (dir) => {
    const { catalog, id } = await catalogOf(dir, 'wide');
    const { body } = await answerApi('task', params({ run: id, task: FOLLOWED }), catalog, tokens());
    return `${(body as { episodes: unknown[] }).episodes.length} episodes of ${FOLLOWED}`;
  },
  'task by indexing every file': async (dir) => {
    const { catalog, id } = await catalogOf(dir, 'wide');
    const run = catalog.get(id)!;
    let found = 0;
    for (const source of run.sources)
      found += (await run.episodes(source.id))!.episodes.filter((e) => e.taskId === FOLLOWED).length;
    return `${found} episodes of ${FOLLOWED}`;
  },
};

const measuring = process.argv.indexOf('--measure');
if (measuring !== -1) {
  const [name, dir] = process.argv.slice(measuring + 1) as [string, string];
  const t = performance.now();
  const result = await MEASURES[name]!(dir);
  const [note, ms] = typeof result === 'string' ? [result, performance.now() - t] : [result.note, result.ms];
  process.stdout.write(JSON.stringify({ ms, peakMib: process.resourceUsage().maxRSS / 1024, note }));
  process.exit(0);
}

const root = mkdtempSync(join(tmpdir(), 'atk-bench-run-dir-'));
try {
  const t = performance.now();
  await buildLongRun(join(root, 'runs'));
  await buildWideRun(join(root, 'runs'));
  console.log(
    `synthetic runs written in ${((performance.now() - t) / 1000).toFixed(1)} s: long (${METRIC_LINES} metrics lines, ${FILES} trajectory files x 10 episodes), wide (${WIDE_STEPS} steps x 100 episodes)`,
  );
  const pairs: [string, string, string][] = [
    ['time to the first metrics page', 'metrics page', 'metrics, every line'],
    ['time to open one trajectory (view)', 'episode via atk view', 'that step file read whole'],
    ['time to open one trajectory (inspect)', 'episode via atk inspect-trajectory', 'that step file read whole'],
    [`following a task across ${WIDE_STEPS} steps`, 'task via atk view', 'task by indexing every file'],
  ];
  for (const [figure, now, baseline] of pairs) {
    const a = measure(now);
    const b = measure(baseline);
    console.log(
      `${figure}: ${fmt(a.ms)} (peak RSS ${a.peakMib.toFixed(0)} MiB; ${a.note}) vs ${baseline}: ${fmt(b.ms)} (peak RSS ${b.peakMib.toFixed(0)} MiB; ${b.note}): ${(b.ms / a.ms).toFixed(1)}x the time, ${(b.peakMib / a.peakMib).toFixed(2)}x the memory`,
    );
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}

function measure(name: string): { ms: number; peakMib: number; note: string } {
  const out = execFileSync('npx', ['tsx', join(projectRoot(), 'bench', 'run-dir.ts'), '--measure', name, root], {
    encoding: 'utf8',
    maxBuffer: 1 << 24,
  });
  return JSON.parse(out) as { ms: number; peakMib: number; note: string };
}

async function buildLongRun(runsDir: string): Promise<void> {
  const run = await createRunDir({
    runsDir,
    name: 'long',
    recipeText: '',
    resolvedYaml: `train:\n  steps: ${METRIC_LINES}\n`,
    seed: 0,
  });
  const out = createWriteStream(run.paths.metrics);
  for (let step = 1; step <= METRIC_LINES; step++) {
    if (!out.write(`${JSON.stringify(metrics(step, 10))}\n`)) await new Promise((r) => out.once('drain', r));
    if (
      step % 1000 === 0 &&
      !out.write(`${JSON.stringify({ kind: 'eval', step, label: `step-${step}`, accuracy: 0.5 })}\n`)
    )
      await new Promise((r) => out.once('drain', r));
  }
  await new Promise<void>((resolve, reject) => out.end((error?: Error | null) => (error ? reject(error) : resolve())));
  // Written directly (not through writeTrajectories' atomic rename): the files' contents are what matters here.
  for (let step = 1; step <= FILES; step++) writeFileSync(run.trajectoryPath(step), lines(step, 10));
  await run.setStatus('finished');
}

async function buildWideRun(runsDir: string): Promise<void> {
  const run = await createRunDir({
    runsDir,
    name: 'wide',
    recipeText: '',
    resolvedYaml: `train:\n  steps: ${WIDE_STEPS}\n`,
    seed: 0,
  });
  mkdirSync(run.trajectoriesDir, { recursive: true });
  for (let step = 1; step <= WIDE_STEPS; step++) {
    writeFileSync(run.trajectoryPath(step), lines(step, 100));
    await run.appendMetrics(metrics(step, 100));
  }
  await run.setStatus('finished');
}

function lines(step: number, episodes: number): string {
  return Array.from({ length: episodes }, (_, i) => `${JSON.stringify(episode(step, i))}\n`).join('');
}

/** A catalog of the one run a figure reads (the other's metrics would be read at open too), and its id. */
async function catalogOf(dir: string, name: 'long' | 'wide'): Promise<{ catalog: RunCatalog; id: string }> {
  const catalog = await RunCatalog.open([join(dir, 'runs', name)]);
  return { catalog, id: catalog.list()[0]!.id };
}

function params(values: Record<string, string>): URLSearchParams {
  return new URLSearchParams(values);
}

function tokens(): EpisodeTokenViews {
  return new EpisodeTokenViews();
}

function fmt(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`;
}
