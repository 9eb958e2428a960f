/**
 * `atk run --resume` after SIGKILL at random moments: every resume finishes, no file is torn, and
 * each completed step is recorded exactly once.
 */
import { readdirSync } from 'node:fs';
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
async function runAndKill(args: readonly string[], killAfterMs: number): Promise<boolean> {
  const child = execa('node', [BIN, 'run', ...args], { reject: false, cwd: projectRoot(), env: { CI: 'true' } });
  const finished = await Promise.race([child.then(() => true), sleep(killAfterMs).then(() => false)]);
  if (!finished) child.kill('SIGKILL');
  await child;
  return finished;
}

describe('atk run --resume', () => {
  it('returns a complete run after repeated SIGKILLs, with every step recorded once', async () => {
    const runsDir = tempRunsDir();
    // Deterministic "random" kill times, spread over trainer start-up, rollouts, training and checkpoints.
    const killTimes = [4_000, 6_500, 5_200, 7_300];
    await runAndKill(['recipes/smoke/quickstart.yaml', ...OVERRIDES, `output.runs_dir=${runsDir}`], killTimes[0]!);
    const dir = join(
      runsDir,
      'smoke-quickstart',
      readdirSync(join(runsDir, 'smoke-quickstart')).find((v) => /^v\d+$/.test(v))!,
    );
    for (const ms of killTimes.slice(1)) await runAndKill(['--resume', dir], ms);
    const final = await execa('node', [BIN, 'run', '--resume', dir], {
      reject: false,
      cwd: projectRoot(),
      env: { CI: 'true' },
    });
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
    const runsDir = tempRunsDir();
    // The first kill after the run directory exists (node start-up on a loaded machine takes seconds), the others in rollouts and training.
    const killTimes = [15_000, 9_000, 11_000];
    await runAndKill(
      ['recipes/smoke/quickstart.yaml', ...OVERRIDES, 'rollout.max_staleness=1', `output.runs_dir=${runsDir}`],
      killTimes[0]!,
    );
    const dir = join(
      runsDir,
      'smoke-quickstart',
      readdirSync(join(runsDir, 'smoke-quickstart')).find((v) => /^v\d+$/.test(v))!,
    );
    for (const ms of killTimes.slice(1)) await runAndKill(['--resume', dir], ms);
    const final = await execa('node', [BIN, 'run', '--resume', dir], {
      reject: false,
      cwd: projectRoot(),
      env: { CI: 'true' },
    });
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
