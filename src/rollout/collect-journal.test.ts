import { appendFileSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { collectJournal } from './collect-journal.js';

describe('collectJournal', () => {
  test('returns the episodes of steps started after the checkpoint, once, keeping the lines of earlier steps', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atk-journal-'));
    mkdirSync(join(dir, 'logs'));
    const journal = collectJournal(dir);
    for (const step of [1, 2, 3, 4]) await journal.started(step, 8);
    // The kill tore the line of step 5 mid-write.
    appendFileSync(join(dir, 'logs', 'collect.jsonl'), '{"step": 5, "epis');
    expect(await journal.discardAfter(2)).toBe(16);
    expect(readFileSync(join(dir, 'logs', 'collect.jsonl'), 'utf8')).toBe(
      '{"step":1,"episodes":8}\n{"step":2,"episodes":8}\n',
    );
    expect(await journal.discardAfter(2)).toBe(0);
  });

  test('returns 0 and drops a torn last line of a step after the checkpoint, so the next line starts clean', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atk-journal-'));
    mkdirSync(join(dir, 'logs'));
    appendFileSync(join(dir, 'logs', 'collect.jsonl'), '{"step":1,"episodes":8}\n{"step"');
    expect(await collectJournal(dir).discardAfter(1)).toBe(0);
    expect(readFileSync(join(dir, 'logs', 'collect.jsonl'), 'utf8')).toBe('{"step":1,"episodes":8}\n');
  });

  test('returns 0 for a run that never started a step', async () => {
    expect(await collectJournal(mkdtempSync(join(tmpdir(), 'atk-journal-'))).discardAfter(0)).toBe(0);
  });
});
