import { mkdirSync, mkdtempSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { evalSummaryOf } from '../__fixtures__/run-events.js';
import { AtkError, InputError } from '../errors/index.js';
import { createRunDir, type RunDir } from '../runs/index.js';
import { evalTable } from '../ui/eval-table.js';
import { checkMinScore, resolveCheckpoint, runEval, unusedLabel, type EvalOptions } from './eval.js';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'atk-eval-'));
});
afterAll(() => rm(root, { recursive: true, force: true }));

const base: Omit<EvalOptions, 'target'> = {
  overrides: [],
  samples: 2,
  temperature: 0,
  metric: 'accuracy',
  resume: false,
  tui: false,
  json: false,
  limit: 4,
};

describe('runEval', () => {
  test("returns the smoke recipe's base model scored by the embedded engine, then gates on --min-score against a baseline", async () => {
    const overrides = [`output.runs_dir=${join(root, 'runs')}`];
    const first = await runEval({ ...base, target: 'recipes/smoke/quickstart.yaml', overrides });
    expect(first.dir).toBe(join(root, 'runs', 'smoke-quickstart-eval', 'v001', 'eval', 'base'));
    const results = (await readFile(join(first.dir, 'results.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { task_id: string; sample: number });
    expect(results.map((r) => r.sample)).toStrictEqual([0, 1, 0, 1, 0, 1, 0, 1]);
    expect(JSON.parse(await readFile(join(first.dir, 'summary.json'), 'utf8'))).toStrictEqual(first.summary);
    expect(first.summary).toMatchObject({ label: 'base', tasks: 4, samples: 2 });
    expect(first.text).toContain(`results: ${first.dir}`);
    const error = await runEval({
      ...base,
      target: 'recipes/smoke/quickstart.yaml',
      overrides,
      baseline: first.dir,
      minScore: 1.01,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AtkError);
    expect([(error as AtkError).exitCode, (error as AtkError).message]).toStrictEqual([
      1,
      `eval base: accuracy ${first.summary.accuracy.toFixed(3)} is below --min-score 1.01`,
    ]);
  }, 120_000);

  test("returns the recipe's eval_limit tasks without --limit, and a recipe eval with a bad --checkpoint ends failed", async () => {
    const overrides = [`output.runs_dir=${join(root, 'limited')}`, 'dataset.eval_limit=3'];
    const { limit: _limit, ...unlimited } = base;
    const scored = await runEval({ ...unlimited, samples: 1, target: 'recipes/smoke/quickstart.yaml', overrides });
    expect(scored.summary).toMatchObject({ tasks: 3, samples: 1 });
    await expect(
      runEval({ ...unlimited, target: 'recipes/smoke/quickstart.yaml', overrides, checkpoint: 'latest' }),
    ).rejects.toThrow('has no complete checkpoint');
    const manifest = JSON.parse(
      await readFile(join(root, 'limited', 'smoke-quickstart-eval', 'v002', 'manifest.json'), 'utf8'),
    ) as { status: string };
    expect(manifest.status).toBe('failed');
  }, 120_000);
});

describe('resolveCheckpoint', () => {
  let run: RunDir;
  beforeAll(async () => {
    run = await createRunDir({
      runsDir: join(root, 'ck'),
      name: 'r',
      recipeText: 'name: r\n',
      resolvedYaml: 'name: r\n',
      seed: 0,
    });
    await run.commitCheckpoint(1, 5);
    await run.commitCheckpoint(2, 5);
  });

  test('returns none for base, the newest for latest, step-N, and a directory as given', async () => {
    expect(await resolveCheckpoint(run, 'base')).toBeUndefined();
    expect(await resolveCheckpoint(run, 'latest')).toStrictEqual({ step: 2, dir: run.checkpointDir(2) });
    expect(await resolveCheckpoint(run, 'step-1')).toStrictEqual({ step: 1, dir: run.checkpointDir(1) });
    expect(await resolveCheckpoint(run, run.checkpointDir(1))).toStrictEqual({ step: 1, dir: run.checkpointDir(1) });
  });

  test('rejects a step without a complete checkpoint, naming the newest, and a value that is nothing', async () => {
    await expect(resolveCheckpoint(run, 'step-5')).rejects.toMatchObject({
      message: `${run.dir} has no complete checkpoint step-00005`,
      hint: 'the newest is step-00002 (--checkpoint latest)',
    });
    await expect(resolveCheckpoint(run, join(root, 'nope'))).rejects.toBeInstanceOf(InputError);
  });
});

describe('checkMinScore', () => {
  test('returns quietly at or above the score and rejects below it or for an unknown figure', () => {
    const s = evalSummaryOf('step-00010', 0.5);
    expect(() => checkMinScore(s, 'accuracy', 0.5)).not.toThrow();
    expect(() => checkMinScore(s, 'pass@1', 0.6)).toThrow('eval step-00010: pass@1 0.500 is below --min-score 0.6');
    expect(() => checkMinScore(s, 'f1', 0.6)).toThrow(InputError);
  });
});

describe('evalTable', () => {
  test('returns the figures with the baseline and the difference', () => {
    const rows = evalTable(evalSummaryOf('step-00010', 0.75), evalSummaryOf('base', 0.5), { tty: false }).split('\n');
    expect(rows[0]!.trim().split(/ {2,}/)).toStrictEqual(['step-00010', 'baseline base', 'difference']);
    expect(rows[1]!.split(/ {2,}/)).toStrictEqual(['accuracy (mean@k)', '0.750', '0.500', '+0.250']);
  });
});

describe('unusedLabel', () => {
  test('returns the label while it is free, then the next numbered one, so an eval never overwrites another', () => {
    const dir = mkdtempSync(join(tmpdir(), 'atk-eval-labels-'));
    expect(unusedLabel(dir, 'step-00100')).toBe('step-00100');
    mkdirSync(join(dir, 'step-00100'));
    mkdirSync(join(dir, 'step-00100-2'));
    expect(unusedLabel(dir, 'step-00100')).toBe('step-00100-3');
  });
});
