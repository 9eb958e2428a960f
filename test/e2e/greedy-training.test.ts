/**
 * Greedy-aligned training on the quickstart task, end to end through the built CLI with the real
 * trainer and embedded engine:
 * - greedy_sft and GRPO each train the quickstart recipe for the same training time
 *   (train.time_budget_s) and both held-out greedy accuracies are printed; greedy_sft must beat the
 *   base model it starts from (the figures in docs/recipes.md, "Greedy-aligned training", come from a longer manual run);
 * - rollout.greedy_per_group: the greedy episode of each GRPO group decodes exactly what eval decodes.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { atkRun, onlyRun, readJson, readJsonl, tempRunsDir } from './run-helpers.js';

/** Training seconds each algorithm gets; small, so the test stays within a few minutes on 2 shared cores. */
const BUDGET_S = 40;
/** Held-out problems per eval (the quickstart's 200 cost as much as several steps). */
const EVAL_TASKS = 100;

interface Trained {
  readonly before: number;
  readonly after: number;
  readonly steps: number;
  readonly runDir: string;
}

/** Train recipes/quickstart.yaml with `overrides` for BUDGET_S seconds of training; its held-out accuracy before and after. */
async function trainQuickstart(name: string, overrides: string[]): Promise<Trained> {
  const runsDir = tempRunsDir();
  const result = await atkRun(
    [
      'recipes/quickstart.yaml',
      `name=${name}`,
      'train.steps=1000',
      `train.time_budget_s=${BUDGET_S}`,
      `dataset.eval_limit=${EVAL_TASKS}`,
      '--no-tui',
      ...overrides,
    ],
    runsDir,
    600_000,
  );
  expect(result.exitCode, result.stderr).toBe(0);
  const runDir = onlyRun(runsDir, name);
  const evals = readJsonl(join(runDir, 'metrics.jsonl')).filter((m) => m.kind === 'eval');
  const summary = readJson(join(runDir, 'summary.json')) as { last_step: { step: number } };
  return {
    before: evals[0]!.accuracy as number,
    after: evals.at(-1)!.accuracy as number,
    steps: summary.last_step.step,
    runDir,
  };
}

describe('greedy-aligned training', () => {
  it('greedy_sft raises held-out greedy accuracy over the base model; GRPO at the same training time is printed beside it', async () => {
    const greedy = await trainQuickstart('greedy-sft', ['algorithm.name=greedy_sft', 'train.tasks_per_step=32']);
    const grpo = await trainQuickstart('grpo', []);
    console.log(
      `quickstart, ${BUDGET_S} s of training each, held-out greedy accuracy on ${EVAL_TASKS} tasks: ` +
        `base ${greedy.before} -> greedy_sft ${greedy.after} (${greedy.steps} steps), grpo ${grpo.after} (${grpo.steps} steps)`,
    );
    // both stopped on the budget, not on train.steps, and started from the same base model
    expect([greedy.steps < 1000, grpo.steps < 1000, greedy.before]).toStrictEqual([true, true, grpo.before]);
    expect(greedy.after).toBeGreaterThan(greedy.before);
    // greedy_sft's episodes: one per task, and only the successful ones trained (advantage 1)
    const records = readJsonl(join(greedy.runDir, 'trajectories', 'step-00001.jsonl'));
    expect(records).toHaveLength(32);
    expect(new Set(records.map((r) => r.sample))).toStrictEqual(new Set([0]));
    expect(records.map((r) => r.advantage)).toStrictEqual(records.map((r) => (r.success ? 1 : null)));
  }, 900_000);

  it("rollout.greedy_per_group: each group's first episode is token for token the eval's greedy episode of its task", async () => {
    // train on the eval's own 8 tasks so the step-1 groups and the eval before training see the same prompts
    const runsDir = tempRunsDir();
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
