import { appendFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createRunDir, type RunDir } from '../runs/index.js';
import { RunIndex } from './run-index.js';

let root: string;
let run: RunDir;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'atk-run-index-'));
  run = await createRunDir({
    runsDir: root,
    name: 'live',
    recipeText: 'name: live\n',
    resolvedYaml: 'train:\n  steps: 10\n',
    seed: 0,
  });
});
afterAll(() => rm(root, { recursive: true, force: true }));

describe('RunIndex', () => {
  test('returns metrics as they are appended, a torn last line only once it is whole', async () => {
    const index = new RunIndex('live/v001', run.dir);
    expect(await index.refresh()).toBe(true);
    expect([index.row().status, index.row().stepsDone, index.row().stepsTotal, index.metrics.train]).toStrictEqual([
      'running',
      0,
      10,
      [],
    ]);
    expect(await index.refresh()).toBe(false);
    await run.appendMetrics({ kind: 'train', step: 1, reward_mean: 0.25 });
    await appendFile(run.paths.metrics, '{"kind":"train","step":2,"rew');
    expect(await index.refresh()).toBe(true);
    expect(index.metrics.train.map((m) => m.step)).toStrictEqual([1]);
    await appendFile(run.paths.metrics, 'ard_mean":0.75}\n');
    expect(await index.refresh()).toBe(true);
    expect([index.row().stepsDone, index.row().lastReward, index.row().bestReward]).toStrictEqual([2, 0.75, 0.75]);
  });

  test('returns the metrics again from the start when a resume rewrote the file shorter', async () => {
    const index = new RunIndex('live/v001', run.dir);
    await index.refresh();
    await run.truncateMetricsAfter(1);
    expect(await index.refresh()).toBe(true);
    expect(index.metrics.train.map((m) => m.step)).toStrictEqual([1]);
  });

  test('returns a 100,000-step metrics file read in chunks as its headline figures, every eval and a chart of 2,000 points', async () => {
    const big = await createRunDir({ runsDir: root, name: 'long', recipeText: '', resolvedYaml: '', seed: 0 });
    const lines: string[] = [];
    for (let step = 1; step <= 100_000; step++) {
      // Rewards peak at step 61,803; a multi-byte label makes some 4 MiB chunk end inside a character.
      const reward = 1 - Math.abs(step - 61_803) / 100_000;
      lines.push(JSON.stringify({ kind: 'train', step, reward_mean: reward, note: 'é'.repeat(step % 50) }));
      if (step % 1000 === 0)
        lines.push(JSON.stringify({ kind: 'eval', step, label: `step-${step}`, accuracy: step / 1e5 }));
    }
    await writeFile(big.paths.metrics, `${lines.join('\n')}\n`);
    const index = new RunIndex('long/v001', big.dir);
    await index.refresh();
    const row = index.row();
    // 100,000 steps thinned to at most 2,000: the stride doubles from 1 to 64 (1,562 multiples of 64), and step 100,000.
    const multiples = Array.from({ length: 1562 }, (_, i) => 64 * (i + 1));
    expect({
      stepsDone: row.stepsDone,
      lastReward: row.lastReward,
      bestReward: row.bestReward,
      evalAfter: row.evalAfter,
      evals: index.metrics.evals.length,
      stride: index.metrics.stride,
      train: index.metrics.train.map((l) => l.step),
      notes: index.metrics.train.every((l) => l.note === 'é'.repeat((l.step as number) % 50)),
    }).toStrictEqual({
      stepsDone: 100_000,
      lastReward: 1 - 38_197 / 100_000,
      bestReward: 1,
      evalAfter: { label: 'step-100000', accuracy: 1 },
      evals: 100,
      stride: 64,
      train: [...multiples, 100_000],
      notes: true,
    });
  });

  test('returns new step files and evals as sources, and statuses of runs that ended or died', async () => {
    const index = new RunIndex('live/v001', run.dir);
    await index.refresh();
    expect(index.sources).toStrictEqual([]);
    await run.writeTrajectories(1, []);
    await writeFile(join(run.evalDir, 'results-elsewhere.txt'), '');
    expect(await index.refresh()).toBe(true);
    expect(index.sources.map((s) => s.id)).toStrictEqual(['step-00001']);
    // A run still marked running whose process is gone was killed without a chance to say so.
    await run.updateManifest({ pid: 2 ** 22 + 17 });
    await index.refresh();
    expect(index.row().status).toBe('stale');
    await run.setStatus('interrupted', 'Ctrl-C');
    await index.refresh();
    expect([index.row().status, index.row().finishedAt !== null]).toStrictEqual(['interrupted', true]);
  });
});
