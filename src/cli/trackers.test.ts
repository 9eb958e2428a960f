import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test, vi } from 'vitest';
import { readEventDir } from '../__fixtures__/tfevents-reader.js';
import { RecipeSchema } from '../recipe/schema.js';
import { createRunDir, type RunDir } from '../runs/index.js';
import { main } from './main.js';
import { runRunsExport } from './runs-export.js';
import { attachTrackers } from './trackers.js';

const recipe = (trackers: string[]) =>
  RecipeSchema.parse({
    name: 'tb',
    model: { path: 'models/tiny-arith' },
    reward: { name: 'math_answer' },
    output: { trackers },
  });
const newRun = (root: string): Promise<RunDir> =>
  createRunDir({
    runsDir: join(root, 'runs'),
    name: 'tb',
    recipeText: 'name: tb\n',
    resolvedYaml: 'name: tb\n',
    seed: 0,
  });
const steps = [
  { kind: 'eval', step: 0, at: '2026-01-01T00:00:00.000Z', accuracy: 0.25 },
  { kind: 'train', step: 1, at: '2026-01-01T00:00:01.000Z', 'reward/mean': 0.5, 'train/loss': 0.125 },
  { kind: 'train', step: 2, at: '2026-01-01T00:00:02.000Z', 'reward/mean': 0.75, 'train/loss': 0.0625 },
  { kind: 'eval', step: 2, at: '2026-01-01T00:00:03.000Z', accuracy: 0.5 },
];
const expected = [
  [0, 'eval/accuracy', 0.25],
  [1, 'reward/mean', 0.5],
  [1, 'train/loss', 0.125],
  [2, 'reward/mean', 0.75],
  [2, 'train/loss', 0.0625],
  [2, 'eval/accuracy', 0.5],
];
const scalars = (dir: string): unknown[] =>
  readEventDir(dir)
    .slice(1)
    .flatMap((e) => e.values.map((v) => [e.step, v.tag, v.simpleValue]));

describe('attachTrackers', () => {
  test('returns a set that writes every metrics line the run appends to <run>/tb, eval figures under eval/', async () => {
    const run = await newRun(mkdtempSync(join(tmpdir(), 'atk-track-')));
    const set = attachTrackers(run, recipe(['tensorboard']))!;
    for (const line of steps) await run.appendMetrics(line);
    await set.close();
    expect(scalars(join(run.dir, 'tb'))).toStrictEqual(expected);
  });

  test('returns undefined and writes nothing without output.trackers', async () => {
    const run = await newRun(mkdtempSync(join(tmpdir(), 'atk-track-')));
    expect(attachTrackers(run, recipe([]))).toBeUndefined();
    await run.appendMetrics(steps[1]!);
    expect(existsSync(join(run.dir, 'tb'))).toBe(false);
  });
});

describe('output.trackers', () => {
  test('rejects output.wandb without wandb among the trackers, a knob that would do nothing', () => {
    const parsed = RecipeSchema.safeParse({
      name: 'tb',
      model: { path: 'm' },
      reward: { name: 'math_answer' },
      output: { trackers: ['tensorboard'], wandb: { project: 'p' } },
    });
    expect(parsed.success ? [] : parsed.error.issues.map((i) => [i.path.join('.'), i.message])).toStrictEqual([
      ['output.wandb', 'does nothing without wandb in output.trackers'],
    ]);
  });
});

describe('atk runs export --to tensorboard', () => {
  test('returns event files for a finished run, replacing an earlier export', async () => {
    const root = mkdtempSync(join(tmpdir(), 'atk-export-'));
    const run = await newRun(root);
    for (const line of steps) await run.appendMetrics(line);
    expect(await runRunsExport({ run: run.dir, to: 'tensorboard', runsDir: join(root, 'runs') })).toStrictEqual({
      dir: join(run.dir, 'tb'),
      lines: 4,
    });
    const printed: string[] = [];
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => printed.push(String(chunk)) > 0);
    try {
      await main(['runs', 'export', 'tb', '--to', 'tensorboard', '--runs-dir', join(root, 'runs')]);
    } finally {
      write.mockRestore();
    }
    expect(printed.join('')).toBe(
      `4 metrics lines -> ${join(run.dir, 'tb')}\ntensorboard --logdir ${join(run.dir, 'tb')}\n`,
    );
    expect(scalars(join(run.dir, 'tb'))).toStrictEqual(expected);
  });
});
