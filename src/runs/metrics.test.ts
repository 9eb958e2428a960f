import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { readMetricsFile, readMetricsTail } from './metrics.js';

const root = mkdtempSync(join(tmpdir(), 'atk-metrics-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** 100,000 steps, lines of varying length, an eval every 1,000, one torn line mid-file and a torn last line. */
function largeMetricsFile(): string {
  const file = join(root, 'large.jsonl');
  const lines: string[] = [];
  for (let step = 1; step <= 100_000; step++) {
    lines.push(JSON.stringify({ kind: 'train', step, reward_mean: step / 100_000, note: 'x'.repeat(step % 37) }));
    if (step % 1000 === 0) lines.push(JSON.stringify({ kind: 'eval', step, label: `step-${step}` }));
    if (step === 99_990) lines.push('{"kind":"train","step":99990,"torn'); // a crash, then appends
  }
  writeFileSync(file, `${lines.join('\n')}\n`);
  appendFileSync(file, '{"kind":"train","step":100001,"reward'); // the writer killed mid-line
  return file;
}

describe('readMetricsTail', () => {
  const file = largeMetricsFile();

  test('returns exactly the last lines readMetricsFile returns, whatever the chunk size', async () => {
    const all = await readMetricsFile(file);
    expect(all.length).toBe(100_100);
    for (const [count, chunk] of [
      [1, 7],
      [5, 100],
      [25, 65_536],
      [1000, 4096],
      [30_000, 1 << 20],
    ] as const)
      expect(await readMetricsTail(file, count, chunk)).toStrictEqual(all.slice(-count));
  });

  test('returns the newest lines, not the torn one after them, skipping the torn line among them', async () => {
    expect(await readMetricsTail(file, 1)).toStrictEqual([{ kind: 'eval', step: 100_000, label: 'step-100000' }]);
    const steps = (await readMetricsTail(file, 12, 50)).map((l) => `${l.kind}:${l.step}`);
    const train = Array.from({ length: 11 }, (_, i) => `train:${99_990 + i}`);
    expect(steps).toStrictEqual([...train, 'eval:100000']);
  });

  test('returns nothing for a missing file, a file of one torn line, or a count of 0', async () => {
    const torn = join(root, 'torn.jsonl');
    writeFileSync(torn, '{"kind":"train","st');
    expect([
      await readMetricsTail(join(root, 'missing.jsonl'), 3),
      await readMetricsTail(torn, 3),
      await readMetricsTail(file, 0),
    ]).toStrictEqual([[], [], []]);
  });
});
