import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { writeFileAtomic, writeJsonAtomic } from './atomic.js';

const root = mkdtempSync(join(tmpdir(), 'atk-atomic-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let dirs = 0;
function freshDir(): string {
  const dir = join(root, `d${dirs++}`);
  mkdirSync(dir);
  return dir;
}

describe('writeFileAtomic', () => {
  test('returns the new content in place of the old, text or bytes, with no temporary file left', async () => {
    const dir = freshDir();
    const path = join(dir, 'manifest.json');
    writeFileSync(path, 'old\n');
    await writeFileAtomic(path, 'new\n');
    expect(readFileSync(path, 'utf8')).toBe('new\n');
    await writeFileAtomic(path, new Uint8Array([104, 105, 10]));
    expect([readFileSync(path, 'utf8'), readdirSync(dir)]).toStrictEqual(['hi\n', ['manifest.json']]);
  });

  test('rejects a write that fails, leaving the old file whole and no temporary file', async () => {
    const dir = freshDir();
    const path = join(dir, 'summary.json');
    writeFileSync(path, '{"old":true}\n');
    // Not a string or bytes: the file handle's write throws after the temporary file was created.
    await expect(writeFileAtomic(path, 42 as unknown as string)).rejects.toThrow(TypeError);
    expect([readFileSync(path, 'utf8'), readdirSync(dir)]).toStrictEqual(['{"old":true}\n', ['summary.json']]);
  });

  test('rejects a rename that fails (the target is a directory), removing its temporary file', async () => {
    const dir = freshDir();
    const path = join(dir, 'step-00001');
    mkdirSync(path);
    writeFileSync(join(path, 'keep'), 'x');
    await expect(writeFileAtomic(path, 'data')).rejects.toThrow(/EISDIR|ENOTEMPTY|EEXIST/);
    expect([readdirSync(dir), readdirSync(path)]).toStrictEqual([['step-00001'], ['keep']]);
  });
});

describe('writeJsonAtomic', () => {
  test('returns pretty JSON with a trailing newline', async () => {
    const path = join(freshDir(), 'summary.json');
    await writeJsonAtomic(path, { a: 1, b: [true] });
    expect(readFileSync(path, 'utf8')).toBe('{\n  "a": 1,\n  "b": [\n    true\n  ]\n}\n');
  });
});
