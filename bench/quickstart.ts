// The README's main job, measured (docs/quickstart.md): quickstart steps per minute, minutes to +20 points of held-out
// accuracy, and where step time goes (generation, training, weight sync, atk's own overhead).
//   npm run bench quickstart                  runs recipes/quickstart.yaml (8 steps)
//   npx tsx bench/quickstart.ts <run-dir>     measures a finished run instead
//   ATK_BENCH_QUICKSTART_STEPS=30 ...         a shorter run: step figures only
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { readMetricsFile } from '../src/runs/metrics.js';
import { minutesToGain, runTiming } from '../src/runs/timing.js';
import { projectRoot } from '../src/util/paths.js';

async function runQuickstart(): Promise<string> {
  const runsDir = mkdtempSync(join(tmpdir(), 'atk-bench-quickstart-'));
  const steps = process.env.ATK_BENCH_QUICKSTART_STEPS;
  const overrides = [
    `output.runs_dir=${runsDir}`,
    ...(steps ? [`train.steps=${steps}`, 'train.eval_every=0', 'train.eval_after=false'] : []),
  ];
  console.log(`quickstart: atk run recipes/quickstart.yaml ${overrides.join(' ')}`);
  await execa('node', [join(projectRoot(), 'bin', 'atk'), 'run', 'recipes/quickstart.yaml', ...overrides, '--no-tui'], {
    cwd: projectRoot(),
    stdout: 'inherit',
    stderr: 'inherit',
  });
  const runs = join(runsDir, 'quickstart');
  return join(
    runs,
    readdirSync(runs)
      .filter((v) => /^v\d+$/.test(v))
      .sort()
      .at(-1)!,
  );
}

const dir = process.argv[2] ?? (await runQuickstart());
const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { started_at: string };
const timing = runTiming(await readMetricsFile(join(dir, 'metrics.jsonl')), manifest.started_at);
const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;
const s = timing.stepShares;
console.log(
  `quickstart: ${timing.stepsPerMinute.toFixed(1)} steps/min (${timing.steps} steps in ${(timing.wallSeconds / 60).toFixed(1)} min wall-clock)`,
);
console.log(
  `quickstart: step time ${pct(s.generation)} rollouts (generation, tools, rewards), ${pct(s.train)} training, ${pct(s.sync)} weight sync, ${pct(s.overhead)} atk overhead; ${pct(timing.outsideStepsShare)} of wall-clock outside steps (start-up, evals, checkpoints)`,
);
for (const e of timing.evals)
  console.log(`quickstart: eval at step ${e.step} (${e.minutes.toFixed(1)} min): ${pct(e.accuracy)}`);
const first = timing.evals[0];
const last = timing.evals.at(-1);
if (first && last && last !== first) {
  const to20 = minutesToGain(timing, 0.2);
  console.log(
    `quickstart: ${((last.accuracy - first.accuracy) * 100).toFixed(1)} points gained; +20 points ${to20 === undefined ? 'not reached' : `after ${to20.toFixed(1)} min`}`,
  );
}
