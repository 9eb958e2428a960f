// Asynchronous rollouts measured: the quickstart with its engine in a process of its own (the embedded
// engine launched as the `vllm serve` stand-in, so trainer and engine each get a core of a 2-core machine),
// at rollout.max_staleness 0, 1 and 2: steps per minute, the ratio to the synchronous loop, where the time
// went (engine busy, trainer busy), staleness, and the held-out accuracy after the same number of steps.
//   npm run bench async                        8 steps of 8 tasks x 8 episodes each, eval on 50 tasks
//   ATK_BENCH_ASYNC_STEPS=20 ATK_BENCH_ASYNC_TASKS=16 ATK_BENCH_ASYNC_EVAL=200 npm run bench async
//   ATK_BENCH_ASYNC_K=0,1 ...                  only those max_staleness values
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { embeddedVllmCommand } from '../src/__fixtures__/engine-processes.js';
import { projectRoot } from '../src/util/paths.js';

const steps = Number(process.env.ATK_BENCH_ASYNC_STEPS ?? 8);
const tasks = Number(process.env.ATK_BENCH_ASYNC_TASKS ?? 8);
const evalLimit = Number(process.env.ATK_BENCH_ASYNC_EVAL ?? 50);
const ks = (process.env.ATK_BENCH_ASYNC_K ?? '0,1,2').split(',').map(Number);

interface Line {
  readonly kind: string;
  readonly step: number;
  readonly at: string;
  readonly [key: string]: unknown;
}

async function run(k: number): Promise<Line[]> {
  const runsDir = mkdtempSync(join(tmpdir(), `atk-bench-async-${k}-`));
  const overrides = [
    `model.engine.kind=vllm`,
    `model.engine.command=${JSON.stringify(embeddedVllmCommand)}`,
    'model.engine.startup_timeout_s=300',
    `rollout.max_staleness=${k}`,
    `train.steps=${steps}`,
    `train.tasks_per_step=${tasks}`,
    'train.eval_every=0',
    'train.save_every=0',
    `dataset.eval_limit=${evalLimit}`,
    `output.runs_dir=${runsDir}`,
  ];
  console.log(`async: atk run recipes/quickstart.yaml ${overrides.join(' ')}`);
  const started = performance.now();
  await execa('node', [join(projectRoot(), 'bin', 'atk'), 'run', 'recipes/quickstart.yaml', ...overrides, '--no-tui'], {
    cwd: projectRoot(),
    stdout: 'ignore',
    stderr: 'inherit',
  });
  const dir = join(
    runsDir,
    'quickstart',
    readdirSync(join(runsDir, 'quickstart'))
      .filter((v) => /^v\d+$/.test(v))
      .sort()
      .at(-1)!,
  );
  console.log(
    `async: max_staleness ${k}: run finished in ${((performance.now() - started) / 60_000).toFixed(1)} min (${dir})`,
  );
  return readFileSync(join(dir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Line);
}

const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;
const results: { k: number; stepSeconds: number; line: string }[] = [];
for (const k of ks) {
  const lines = await run(k);
  const train = lines.filter((l) => l.kind === 'train');
  // Step time from consecutive step end times, skipping step 1 (nothing runs ahead of it yet).
  const gaps = train.slice(1).map((l, i) => (Date.parse(l.at) - Date.parse(train[i]!.at)) / 1000);
  const stepSeconds = mean(gaps);
  const figure = (key: string): number => mean(train.slice(1).map((l) => Number(l[key] ?? 0)));
  const evals = lines.filter((l) => l.kind === 'eval');
  const accuracy = (l: Line | undefined): string => (l ? pct(Number(l.accuracy)) : '-');
  results.push({
    k,
    stepSeconds,
    line:
      `${(60 / stepSeconds).toFixed(2)} steps/min (${stepSeconds.toFixed(1)} s/step; generation ${figure('time_generation_s').toFixed(1)} s waited, train ${figure('time_train_s').toFixed(1)} s, sync ${figure('time_sync_s').toFixed(1)} s), ` +
      `engine busy ${pct(figure('engine_busy_share'))}, trainer busy ${pct(figure('trainer_busy_share'))}, staleness ${figure('staleness_mean').toFixed(2)} (max ${Math.max(0, ...train.map((l) => Number(l.staleness_max ?? 0)))}), ` +
      `stale groups dropped ${train.reduce((a, l) => a + Number(l.stale_groups_dropped ?? 0), 0)}, mismatch ${figure('train/mismatch_mean').toExponential(2)}; held-out ${accuracy(evals[0])} -> ${accuracy(evals.at(-1))}`,
  });
}
const base = results.find((r) => r.k === 0);
for (const r of results)
  console.log(
    `async: max_staleness ${r.k}: ${r.line}${base && r !== base ? `; step time ${(r.stepSeconds / base.stepSeconds).toFixed(2)}x the synchronous loop` : ''}`,
  );
