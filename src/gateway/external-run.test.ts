import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { runAtk } from '../__fixtures__/atk-process.js';
import { runInspectTrajectory } from '../cli/inspect-trajectory.js';
import { projectRoot } from '../util/paths.js';

// `atk run recipes/external-agent.yaml` end to end: the tiny model trained through the standard-library
// Python agent on arith, against recipes/quickstart.yaml (the built-in agent) with the same seed and
// budget. Both render the same prompts (the tiny template shows tool and argument names only) and the
// gateway sends the episode's seed like the built-in agent, so their rewards must stay close.
const budget = [
  'train.steps=3',
  'train.tasks_per_step=4',
  'train.eval_before=false',
  'train.eval_every=0',
  'train.save_every=0',
  'dataset.eval_limit=32',
  'rollout.concurrency=32',
];

interface MetricsLine {
  readonly kind: string;
  readonly reward_mean: number;
  readonly accuracy: number;
  readonly failed_episodes: number;
  readonly trained_sequences?: number;
  readonly 'gateway/history_rewrites'?: number;
}

async function run(recipe: string, runsDir: string): Promise<MetricsLine[]> {
  const result = await runAtk(
    ['run', join(projectRoot(), 'recipes', recipe), ...budget, `output.runs_dir=${runsDir}`],
    { cwd: runsDir },
  );
  expect([result.exitCode, result.stderr]).toStrictEqual([0, '']);
  const name = recipe.replace(/\.yaml$/, '');
  return readFileSync(join(runsDir, name, 'v001', 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as MetricsLine);
}

describe('atk run with an external agent', () => {
  test("returns a training run of the Python agent whose rewards track the built-in agent's on the same budget", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atk-external-run-'));
    const [external, builtin] = [await run('external-agent.yaml', dir), await run('quickstart.yaml', dir)];
    const steps = (lines: MetricsLine[]): MetricsLine[] => lines.filter((l) => l.kind === 'train');
    const mean = (lines: MetricsLine[]): number => lines.reduce((a, l) => a + l.reward_mean, 0) / lines.length;
    expect(
      steps(external).map((s) => [s.failed_episodes, s['gateway/history_rewrites'], (s.trained_sequences ?? 0) > 0]),
    ).toStrictEqual([
      [0, 0, true],
      [0, 0, true],
      [0, 0, true],
    ]);
    expect(Math.abs(mean(steps(external)) - mean(steps(builtin)))).toBeLessThan(0.1);
    const evalAccuracy = (lines: MetricsLine[]): number => lines.filter((l) => l.kind === 'eval').at(-1)!.accuracy;
    expect(Math.abs(evalAccuracy(external) - evalAccuracy(builtin))).toBeLessThan(0.1);
    // The drift audit re-renders a recorded gateway episode with the tools its requests carried.
    const inspected = JSON.parse(
      await runInspectTrajectory({
        path: join(dir, 'external-agent', 'v001'),
        step: 3,
        episode: 0,
        drift: true,
        json: true,
        tokens: false,
        best: false,
        worst: false,
        failed: false,
      }),
    ) as { drift: { identical: boolean; changedModelTokens: number } };
    expect(inspected.drift.changedModelTokens).toBe(0);
  }, 900_000);
});
