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
    expect([index.row().status, index.row().stepsDone, index.row().stepsTotal, index.metrics]).toStrictEqual([
      'running',
      0,
      10,
      [],
    ]);
    expect(await index.refresh()).toBe(false);
    await run.appendMetrics({ kind: 'train', step: 1, reward_mean: 0.25 });
    await appendFile(run.paths.metrics, '{"kind":"train","step":2,"rew');
    expect(await index.refresh()).toBe(true);
    expect(index.metrics.map((m) => m.step)).toStrictEqual([1]);
    await appendFile(run.paths.metrics, 'ard_mean":0.75}\n');
    expect(await index.refresh()).toBe(true);
    expect([index.row().stepsDone, index.row().lastReward, index.row().bestReward]).toStrictEqual([2, 0.75, 0.75]);
  });

  test('returns the metrics again from the start when a resume rewrote the file shorter', async () => {
    const index = new RunIndex('live/v001', run.dir);
    await index.refresh();
    await run.truncateMetricsAfter(1);
    expect(await index.refresh()).toBe(true);
    expect(index.metrics.map((m) => m.step)).toStrictEqual([1]);
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
