/**
 * `atk run --resume` after SIGKILL at random moments: every resume finishes, no file is torn, and
 * each completed step is recorded exactly once.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { datasetContext } from '../../src/datasets/context.js';
import { datasets } from '../../src/datasets/index.js';
import { loadRecipe } from '../../src/recipe/index.js';
import { tasksForStep } from '../../src/rollout/task-stream.js';
import { projectRoot } from '../../src/util/paths.js';
import '../../src/builtins.js';
import { BIN, readJson, readJsonl, tempRunsDir } from './run-helpers.js';

const STEPS = 6;
const OVERRIDES = [
  `train.steps=${STEPS}`,
  'train.save_every=1',
  'train.tasks_per_step=2',
  'algorithm.group_size=4',
  'dataset.eval_limit=4',
];

/** Start `atk run`, SIGKILL it after `killAfterMs` (if still running); resolves when it is gone. */
async function runAndKill(args: readonly string[], killAfterMs: number | (() => Promise<void>)): Promise<boolean> {
  const child = execa('node', [BIN, 'run', ...args], { reject: false, cwd: projectRoot(), env: { CI: 'true' } });
  const deadline = typeof killAfterMs === 'number' ? sleep(killAfterMs) : killAfterMs();
  const finished = await Promise.race([child.then(() => true), deadline.then(() => false)]);
  if (!finished) child.kill('SIGKILL');
  await child;
  return finished;
}

/** The run's version directory under `runsDir` once `atk run` has made it (the CLI first checks torch, loads the recipe and data). */
async function versionDir(runsDir: string): Promise<string> {
  const root = join(runsDir, 'smoke-quickstart');
  for (let waited = 0; waited < 120_000; waited += 100) {
    const version = existsSync(root) ? readdirSync(root).find((v) => /^v\d+$/.test(v)) : undefined;
    if (version) return join(root, version);
    await sleep(100);
  }
  throw new Error(`no run directory under ${root} after 120 s`);
}

/**
 * A new smoke quickstart run with `overrides`, SIGKILLed `killTimes[0]` ms after its run directory
 * appears, then resumed and SIGKILLed after each later kill time, then resumed to the end.
 */
async function killAndResume(overrides: readonly string[], killTimes: readonly number[]) {
  const runsDir = tempRunsDir();
  let dir = '';
  await runAndKill(
    ['recipes/smoke/quickstart.yaml', ...OVERRIDES, ...overrides, `output.runs_dir=${runsDir}`],
    async () => {
      dir = await versionDir(runsDir);
      await sleep(killTimes[0]!);
    },
  );
  dir ||= await versionDir(runsDir);
  for (const ms of killTimes.slice(1)) await runAndKill(['--resume', dir], ms);
  const final = await execa('node', [BIN, 'run', '--resume', dir], {
    reject: false,
    cwd: projectRoot(),
    env: { CI: 'true' },
  });
  return { dir, final };
}

describe('atk run --resume', () => {
  it('returns a complete run after repeated SIGKILLs, with every step recorded once', async () => {
    // Deterministic "random" kill times, spread over trainer start-up, rollouts, training and checkpoints.
    const { dir, final } = await killAndResume([], [1_000, 6_500, 5_200, 7_300]);
    expect(final.stderr).toBe('');
    expect(final.exitCode).toBe(0);

    expect(readJson(join(dir, 'manifest.json')).status).toBe('finished');
    const metrics = readJsonl(join(dir, 'metrics.jsonl'));
    expect(metrics.filter((l) => l.kind === 'train').map((l) => l.step)).toStrictEqual([1, 2, 3, 4, 5, 6]);
    const evals = metrics.filter((l) => l.kind === 'eval').map((l) => l.step);
    expect(new Set(evals).size).toBe(evals.length);
    expect(evals).toContain(STEPS);

    const files = readdirSync(join(dir, 'trajectories'));
    expect(files.sort()).toStrictEqual([1, 2, 3, 4, 5, 6].map((s) => `step-${String(s).padStart(5, '0')}.jsonl`));
    for (const file of files) {
      const records = readJsonl(join(dir, 'trajectories', file));
      const keys = records.map((r) => `${r.group}/${r.sample}`);
      expect(new Set(keys).size).toBe(records.length);
      expect(records.length).toBe(2 * 4);
    }

    // Resuming a finished run repeats nothing: its evals (before and after training) are already recorded.
    const again = await execa('node', [BIN, 'run', '--resume', dir], {
      reject: false,
      cwd: projectRoot(),
      env: { CI: 'true' },
    });
    expect(again.exitCode).toBe(0);
    expect(readJsonl(join(dir, 'metrics.jsonl'))).toStrictEqual(metrics);
  }, 600_000);

  it('returns a complete run after SIGKILLs with rollouts collected ahead (max_staleness 1): steps once, episodes of untrained steps counted, the data order of the steps that trained', async () => {
    // The first kill in the first step's rollouts, the others in rollouts and training of resumed runs.
    const { dir, final } = await killAndResume(['rollout.max_staleness=1'], [5_000, 9_000, 11_000]);
    expect([final.exitCode, final.stderr]).toStrictEqual([0, '']);

    expect(readJson(join(dir, 'manifest.json')).status).toBe('finished');
    const metrics = readJsonl(join(dir, 'metrics.jsonl'));
    const train = metrics.filter((l) => l.kind === 'train');
    expect(train.map((l) => l.step)).toStrictEqual([1, 2, 3, 4, 5, 6]);
    expect(train.every((l) => (l.staleness_max as number) <= 1)).toBe(true);
    // Each resume that found episodes of steps after its checkpoint counted them once.
    for (const line of metrics.filter((l) => l.kind === 'resume')) expect(line.discarded_episodes).toBeGreaterThan(0);

    // Whatever was killed and collected again, each step trained on the tasks the data order gives it.
    const { recipe } = await loadRecipe(join(dir, 'resolved.yaml'));
    const tasks = await (await datasets.get(recipe.dataset.name)).load(
      recipe.dataset.split,
      datasetContext(recipe, dir),
    );
    for (const step of [1, 2, 3, 4, 5, 6]) {
      const records = readJsonl(join(dir, 'trajectories', `step-${String(step).padStart(5, '0')}.jsonl`));
      expect(records.map((r) => `${r.group}/${r.sample}`).sort()).toStrictEqual([
        '0/0',
        '0/1',
        '0/2',
        '0/3',
        '1/0',
        '1/1',
        '1/2',
        '1/3',
      ]);
      const byGroup = [0, 1].map((g) => [...new Set(records.filter((r) => r.group === g).map((r) => r.task_id))]);
      expect(byGroup).toStrictEqual(tasksForStep(tasks, recipe.seed, step - 1, 2).map((t) => [t.id]));
    }
  }, 600_000);
});
