import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { TrainerError } from '../errors/index.js';
import { lastExceptionLine, trainerErrorFromLog } from './traceback.js';

const CHAINED = `serving on 127.0.0.1:1234
Traceback (most recent call last):
  File "a.py", line 3, in <module>
    f()
KeyError: 'x'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "a.py", line 5, in <module>
    raise ValueError("bad\\nsecond line")
    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
ValueError: bad
second line
`;

describe('lastExceptionLine', () => {
  test('returns the exception line of the last traceback', () => {
    expect(lastExceptionLine(CHAINED)).toBe('ValueError: bad');
  });
  test('returns the last non-empty line when there is no traceback', () => {
    expect(lastExceptionLine('starting\nKilled\n\n')).toBe('Killed');
    expect(lastExceptionLine('')).toBe('');
  });
});

describe('trainerErrorFromLog', () => {
  test('returns a one-line TrainerError naming the exception and the log', async () => {
    const log = join(mkdtempSync(join(tmpdir(), 'atk-tb-')), 'trainer.log');
    writeFileSync(log, CHAINED);
    const error = await trainerErrorFromLog('trainer exited', log);
    expect(error).toBeInstanceOf(TrainerError);
    expect([error.message, error.logPath]).toStrictEqual([`trainer exited: ValueError: bad (log: ${log})`, log]);
  });
  test('returns the bare message when the log is missing', async () => {
    const error = await trainerErrorFromLog('trainer exited', '/nonexistent/trainer.log');
    expect(error.message).toBe('trainer exited (log: /nonexistent/trainer.log)');
  });
});
