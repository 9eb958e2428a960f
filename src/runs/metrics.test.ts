import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
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

describe('readMetricsFile', () => {
  test('returns only whole JSON objects: a last line without its newline, blank lines and non-objects are skipped', async () => {
    const file = join(root, 'mixed.jsonl');
    const lines = ['{"step":1}', '', 'null', '5', '"text"', '[1,2]', 'true', '{"step":2}', '{"torn', '{"step":3}'];
    // The last line is a whole object, but a writer killed before its newline may have meant more.
    writeFileSync(file, `${lines.join('\n')}\n{"step":4}`);
    expect(await readMetricsFile(file)).toStrictEqual([{ step: 1 }, { step: 2 }, { step: 3 }]);
  });

  test('returns nothing for a missing file and rejects a path it cannot read', async () => {
    const dir = join(root, 'a-directory.jsonl');
    mkdirSync(dir);
    expect(await readMetricsFile(join(root, 'missing.jsonl'))).toStrictEqual([]);
    await expect(readMetricsFile(dir)).rejects.toThrow(/EISDIR/);
  });
});

describe('readMetricsTail, edge cases', () => {
  test('returns every line, the first included, when asked for more than the file has', async () => {
    const file = join(root, 'short.jsonl');
    writeFileSync(file, '{"step":1}\n{"step":2}\n{"step":3}\n');
    for (const chunk of [4, 11, 1 << 16])
      expect(await readMetricsTail(file, 10, chunk)).toStrictEqual([{ step: 1 }, { step: 2 }, { step: 3 }]);
  });

  test('returns no part of a last line without its newline, even one longer than a chunk that holds whole objects', async () => {
    const file = join(root, 'torn-objects.jsonl');
    // A torn last line whose chunk-sized pieces parse on their own: they must not be taken for lines.
    writeFileSync(file, '{"step":1}\n{"step":2}\n{"s":3}{"t":4}');
    for (const chunk of [7, 3, 1 << 16])
      expect(await readMetricsTail(file, 5, chunk)).toStrictEqual([{ step: 1 }, { step: 2 }]);
    writeFileSync(file, '{"step":1}\n{"step":2}');
    expect(await readMetricsTail(file, 5, 4)).toStrictEqual([{ step: 1 }]);
  });

  test('returns the same lines as readMetricsFile for non-objects and blank lines', async () => {
    const file = join(root, 'non-objects.jsonl');
    writeFileSync(file, '{"step":1}\n\nnull\n5\n[1]\n"s"\n{"step":2}\n');
    expect(await readMetricsTail(file, 10, 5)).toStrictEqual([{ step: 1 }, { step: 2 }]);
  });

  test('rejects a path it cannot open, and closes the file it reads', async () => {
    const file = join(root, 'short-closed.jsonl');
    writeFileSync(file, '{"step":1}\n');
    await expect(readMetricsTail(join(file, 'below-a-file.jsonl'), 1)).rejects.toThrow(/ENOTDIR/);
    const open = readdirSync('/proc/self/fd').length;
    for (let i = 0; i < 20; i++) await readMetricsTail(file, 1);
    expect(readdirSync('/proc/self/fd').length).toBe(open);
  });
});
