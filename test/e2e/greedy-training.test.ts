/**
 * Greedy-aligned training on the quickstart task, end to end through the built CLI with the real
 * trainer and embedded engine:
 * - greedy_sft trains the quickstart recipe for a set number of steps and must beat the base model it
 *   starts from on held-out greedy accuracy (the figures in docs/recipes.md, "Greedy-aligned training",
 *   come from a longer manual run). Nothing here depends on how fast the host is: learning is asked of a
 *   number of steps.
 * - train.time_budget_s stops a run after the step that spends it.
 * - rollout.greedy_per_group: the greedy episode of each GRPO group decodes exactly what eval decodes.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { atkRun, onlyRun, readJson, readJsonl, tempRunsDir } from './run-helpers.js';

/** greedy_sft's steps of 32 tasks: it gained ~30 points of held-out accuracy in 4 (docs/recipes.md). */
const GREEDY_STEPS = 4;
/** Held-out problems per eval (the quickstart's 200 cost as much as several steps). */
const EVAL_TASKS = 100;

const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A fresh runs directory, removed after the tests. */
function runsDirectory(): string {
  const dir = tempRunsDir();
  made.push(dir);
  return dir;
}

/** Train recipes/quickstart.yaml with `overrides` (the steps among them): its run directory and steps run. */
async function trainQuickstart(name: string, overrides: string[]): Promise<{ runDir: string; steps: number }> {
  const runsDir = runsDirectory();
  const result = await atkRun(['recipes/quickstart.yaml', `name=${name}`, '--no-tui', ...overrides], runsDir, 600_000);
  expect(result.exitCode, result.stderr).toBe(0);
  const runDir = onlyRun(runsDir, name);
  const summary = readJson(join(runDir, 'summary.json')) as { last_step: { step: number } };
  return { runDir, steps: summary.last_step.step };
}

/** Held-out accuracy before and after a run's training, from its metrics. */
function heldOut(runDir: string): { before: number; after: number } {
  const evals = readJsonl(join(runDir, 'metrics.jsonl')).filter((m) => m.kind === 'eval');
  return { before: evals[0]!.accuracy as number, after: evals.at(-1)!.accuracy as number };
}

describe('greedy-aligned training', () => {
  it(`greedy_sft raises held-out greedy accuracy over the base model within ${GREEDY_STEPS} steps`, async () => {
    const greedy = await trainQuickstart('greedy-sft', [
      'algorithm.name=greedy_sft',
      'train.tasks_per_step=32',
      `train.steps=${GREEDY_STEPS}`,
      `dataset.eval_limit=${EVAL_TASKS}`,
    ]);
    const accuracy = heldOut(greedy.runDir);
    console.log(
      `quickstart, held-out greedy accuracy on ${EVAL_TASKS} tasks: base ${accuracy.before} -> greedy_sft ${accuracy.after} (${greedy.steps} steps)`,
    );
    expect(greedy.steps).toBe(GREEDY_STEPS);
    expect(accuracy.after).toBeGreaterThan(accuracy.before);
    // greedy_sft's episodes: one per task, and only the successful ones trained (advantage 1)
    const records = readJsonl(join(greedy.runDir, 'trajectories', 'step-00001.jsonl'));
    expect(records).toHaveLength(32);
    expect(new Set(records.map((r) => r.sample))).toStrictEqual(new Set([0]));
    expect(records.map((r) => r.advantage)).toStrictEqual(records.map((r) => (r.success ? 1 : null)));
  }, 900_000);

  it('stops a run after the step that spends train.time_budget_s', async () => {
    // Any first step spends a budget of 1 ms, however fast the host: the run stops after exactly one.
    const grpo = await trainQuickstart('grpo-budget', [
      'train.steps=1000',
      'train.time_budget_s=0.001',
      'train.tasks_per_step=2',
      'algorithm.group_size=2',
      'train.eval_before=false',
      'train.eval_after=false',
    ]);
    expect(grpo.steps).toBe(1);
  }, 600_000);

  it("rollout.greedy_per_group: each group's first episode is token for token the eval's greedy episode of its task", async () => {
    // train on the eval's own 8 tasks so the step-1 groups and the eval before training see the same prompts
    const runsDir = runsDirectory();
    const result = await atkRun(
      [
        'recipes/quickstart.yaml',
        'name=greedy-group',
        'train.steps=1',
        'train.tasks_per_step=8',
        'algorithm.group_size=4',
        'rollout.greedy_per_group=1',
        'dataset.split=test',
        'dataset.limit=8',
        'dataset.eval_limit=8',
        'train.eval_after=false',
        '--no-tui',
      ],
      runsDir,
    );
    expect(result.exitCode, result.stderr).toBe(0);
    const runDir = onlyRun(runsDir, 'greedy-group');
    const tokens = (r: Record<string, unknown>) => (r.trajectory as { ids: number[] }).ids;
    const evalRecords = readJsonl(join(runDir, 'eval', 'step-00000', 'results.jsonl'));
    const evalByTask = new Map(evalRecords.map((r) => [r.task_id, tokens(r)]));
    const step = readJsonl(join(runDir, 'trajectories', 'step-00001.jsonl'));
    expect(evalByTask.size).toBe(8);
    const greedyEpisodes = step.filter((r) => r.sample === 0);
    expect(greedyEpisodes).toHaveLength(8);
    for (const r of greedyEpisodes) expect(tokens(r)).toStrictEqual(evalByTask.get(r.task_id));
    // the sampled episodes (temperature 1) are not all the greedy one
    const sampled = step.filter((r) => r.sample !== 0);
    expect(sampled.some((r) => JSON.stringify(tokens(r)) !== JSON.stringify(evalByTask.get(r.task_id)))).toBe(true);
  }, 600_000);
});
