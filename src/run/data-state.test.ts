import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { DATA_STATE_FILE, readDataState, writeDataState } from './data-state.js';

const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'atk-data-state-'));
  made.push(dir);
  return dir;
}

describe('writeDataState', () => {
  test('returns the state read back from a checkpoint directory it had to create, parents included', async () => {
    const dir = join(tempDir(), 'checkpoints', 'step-00003');
    const state = { position: 7, curriculum: { t1: 'ss', t4: 'mu' } };
    await writeDataState(dir, state);
    expect(await readDataState(dir)).toStrictEqual(state);
  });
});

describe('readDataState', () => {
  test('returns undefined for a checkpoint that saved no state', async () => {
    expect(await readDataState(tempDir())).toBeUndefined();
  });

  test('rejects a file without a numeric position or a curriculum object, naming the file', async () => {
    for (const bad of [{ position: 3 }, { position: 3, curriculum: null }, { position: '3', curriculum: {} }]) {
      const dir = tempDir();
      writeFileSync(join(dir, DATA_STATE_FILE), JSON.stringify(bad));
      await expect(readDataState(dir)).rejects.toThrow(`${join(dir, DATA_STATE_FILE)} is not a data stream state`);
    }
  });
});
