// Multi-turn RL, measured (docs/helpdesk.md): recipes/helpdesk.yaml per seed, and its three negative controls,
// the same run with user and tool tokens trained (ATK_NEGATIVE_CONTROL=train_environment_tokens), with only
// the first model turn trained (train_first_model_turn_only) and with the rewards shuffled across each step's
// episodes (shuffle_rewards): held-out task success before and after, policy violations per episode, and
// wall time of each `atk run`.
//   npm run bench helpdesk                                    seeds 0-2, the recipe and every control
//   ATK_BENCH_HELPDESK_SEEDS=0,1,2,3,4 ATK_BENCH_HELPDESK_RUNS=recipe npm run bench helpdesk
//   ATK_BENCH_HELPDESK_ARGS="train.steps=4" ...              overrides for every run
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { execa } from 'execa';
import { readMetricsFile } from '../src/runs/metrics.js';
import { projectRoot } from '../src/util/paths.js';

const KINDS = ['recipe', 'train_environment_tokens', 'train_first_model_turn_only', 'shuffle_rewards'] as const;
type Kind = (typeof KINDS)[number];

const seeds = (process.env.ATK_BENCH_HELPDESK_SEEDS ?? '0,1,2').split(',').map(Number);
const kinds = (process.env.ATK_BENCH_HELPDESK_RUNS?.split(',') ?? KINDS) as Kind[];
const extra = process.env.ATK_BENCH_HELPDESK_ARGS?.split(' ').filter(Boolean) ?? [];

interface Result {
  readonly before: number;
  readonly after: number;
  readonly violationsBefore: number;
  readonly violationsAfter: number;
  readonly seconds: number;
}

async function run(kind: Kind, seed: number): Promise<Result> {
  const runsDir = mkdtempSync(join(tmpdir(), 'atk-bench-helpdesk-'));
  try {
    const started = performance.now();
    await execa(
      'node',
      [
        join(projectRoot(), 'bin', 'atk'),
        'run',
        'recipes/helpdesk.yaml',
        `seed=${seed}`,
        ...extra,
        `output.runs_dir=${runsDir}`,
        '--no-tui',
      ],
      { cwd: projectRoot(), env: kind === 'recipe' ? {} : { ATK_NEGATIVE_CONTROL: kind } },
    );
    const seconds = (performance.now() - started) / 1000;
    const version = readdirSync(join(runsDir, 'helpdesk')).find((v) => /^v\d+$/.test(v))!;
    const evals = (await readMetricsFile(join(runsDir, 'helpdesk', version, 'metrics.jsonl'))).filter(
      (m) => m.kind === 'eval',
    );
    const [first, last] = [evals[0]!, evals.at(-1)!];
    return {
      before: first.accuracy as number,
      after: last.accuracy as number,
      violationsBefore: (first.policy_violations_per_episode as number | undefined) ?? Number.NaN,
      violationsAfter: (last.policy_violations_per_episode as number | undefined) ?? Number.NaN,
      seconds,
    };
  } finally {
    rmSync(runsDir, { recursive: true, force: true });
  }
}

const points = (x: number): string => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}`;
const gains = new Map<Kind, number[]>();
for (const kind of kinds) {
  for (const seed of seeds) {
    const r = await run(kind, seed);
    gains.set(kind, [...(gains.get(kind) ?? []), r.after - r.before]);
    console.log(
      `helpdesk ${kind} seed ${seed}: held-out success ${(100 * r.before).toFixed(1)}% -> ${(100 * r.after).toFixed(1)}% (${points(r.after - r.before)} points), ` +
        `violations/ep ${r.violationsBefore.toFixed(2)} -> ${r.violationsAfter.toFixed(2)}, ${r.seconds.toFixed(0)} s wall`,
    );
  }
}
const mean = (xs: readonly number[]): number => xs.reduce((a, x) => a + x, 0) / xs.length;
for (const [kind, g] of gains)
  console.log(`helpdesk ${kind}: mean gain ${points(mean(g))} points over ${g.length} seeds`);
const base = gains.get('recipe');
for (const [kind, g] of gains) {
  if (kind !== 'recipe' && base)
    console.log(`helpdesk ${kind}: ${points(mean(base) - mean(g))} points less than the recipe`);
}
