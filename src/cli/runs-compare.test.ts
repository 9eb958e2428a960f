import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { recordRun } from '../__fixtures__/recorded-run.js';
import { runRunsCompare } from './runs-compare.js';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'atk-compare-'));
  await recordRun(root, { name: 'base', metricSteps: 10, trajectorySteps: 1 });
  await recordRun(root, { name: 'tuned', metricSteps: 20, trajectorySteps: 1, rewardShift: 0.1 });
});
afterAll(() => rm(root, { recursive: true, force: true }));

describe('runRunsCompare', () => {
  test('returns final and best figures of each run side by side, with the step they were reached at', async () => {
    const out = await runRunsCompare(['base', 'tuned/v001'], join(root, 'runs'), { tty: false });
    const rows = new Map(
      out
        .trim()
        .split('\n')
        .map((l) => [l.split(/ {2,}/)[0]!, l.split(/ {2,}/).slice(1)] as const),
    );
    expect(out.split('\n')[0]!.trim().split(/ +/)).toStrictEqual(['base/v001', 'tuned/v001']);
    expect(rows.get('status')).toStrictEqual(['finished', 'finished']);
    expect(rows.get('steps')).toStrictEqual(['10/40', '20/40']);
    // The synthetic curve: 0.2 + 0.6 (1 - e^(-step/12)) + 0.03 sin(1.7 step) (+ 0.1 for tuned).
    const curve = (step: number, shift: number): number =>
      0.2 + 0.6 * (1 - Math.exp(-step / 12)) + 0.03 * Math.sin(step * 1.7) + shift;
    expect(rows.get('reward_mean final')).toStrictEqual([
      `${curve(10, 0).toFixed(3)} @10`,
      `${curve(20, 0.1).toFixed(3)} @20`,
    ]);
    const best = (steps: number, shift: number): string => {
      const values = Array.from({ length: steps }, (_, s) => curve(s + 1, shift)); // steps 1..steps
      const at = values.indexOf(Math.max(...values));
      return `${values[at]!.toFixed(3)} @${at + 1}`;
    };
    expect(rows.get('reward_mean best')).toStrictEqual([best(10, 0), best(20, 0.1)]);
    expect(rows.get('eval accuracy final')).toStrictEqual(['0.750 @10', '0.850 @20']);
    expect(rows.get('eval accuracy best')).toStrictEqual(['0.750 @10', '0.850 @20']);
    expect(rows.get('eval pass@2 final')).toStrictEqual(['0.500', '0.500']);
  });

  test('rejects a run that does not exist, naming the nearest', async () => {
    await expect(runRunsCompare(['base', 'tund'], join(root, 'runs'))).rejects.toThrow("no run 'tund' in");
  });
});
