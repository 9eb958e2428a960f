import { mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { allocateVersion, formatVersion, listVersions, readLatest, updateLatest, versionNumber } from './versions.js';
import { withPatched } from '../__fixtures__/patch-builtin.js';

const root = mkdtempSync(join(tmpdir(), 'atk-versions-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let dirs = 0;
/** A fresh `runs/<name>/` directory holding the given version directories and plain files. */
function nameDir(versions: readonly string[] = [], files: readonly string[] = []): string {
  const dir = join(root, `name-${dirs++}`);
  mkdirSync(dir);
  for (const v of versions) mkdirSync(join(dir, v));
  for (const f of files) writeFileSync(join(dir, f), 'not a version\n');
  return dir;
}

function errno(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: refused`), { code });
}

describe('listVersions', () => {
  test('returns only version directories, in numeric order past v999', async () => {
    const dir = nameDir(['v1000', 'v010', 'v999', 'v002', 'notes', 'v01'], ['v005', 'latest-old']);
    expect(await listVersions(dir)).toStrictEqual(['v002', 'v010', 'v999', 'v1000']);
  });

  test('returns none for a name directory that does not exist', async () => {
    expect(await listVersions(join(root, 'missing'))).toStrictEqual([]);
  });
});

describe('allocateVersion', () => {
  test('returns v001 for a new name, creating runs/<name>/', async () => {
    const dir = join(root, 'fresh', 'demo');
    expect(await allocateVersion(dir)).toBe('v001');
    expect(readdirSync(dir)).toStrictEqual(['v001']);
  });

  test('returns the number after the highest version, never reusing the number of a deleted one', async () => {
    const dir = nameDir(['v001', 'v005']);
    expect(await allocateVersion(dir)).toBe('v006');
    expect(await listVersions(dir)).toStrictEqual(['v001', 'v005', 'v006']);
  });

  test('returns the next free number when the one after the highest is taken (by a file it does not list)', async () => {
    const dir = nameDir(['v001'], ['v002', 'v003']);
    expect(await allocateVersion(dir)).toBe('v004');
    expect(readFileSync(join(dir, 'v002'), 'utf8')).toBe('not a version\n');
  });

  test('rejects with the error of a mkdir that fails other than EEXIST, without trying further numbers', async () => {
    const dir = nameDir(['v001']);
    const tried: string[] = [];
    const { mkdir } = fsp;
    const failing = (async (path: Parameters<typeof mkdir>[0], options?: Parameters<typeof mkdir>[1]) => {
      if (options === undefined) {
        tried.push(String(path));
        throw errno('EIO');
      }
      return mkdir(path, options);
    }) as typeof mkdir;
    await withPatched(
      fsp,
      'mkdir',
      () => failing,
      async () => {
        await expect(allocateVersion(dir)).rejects.toThrow('EIO: refused');
      },
    );
    expect(tried).toStrictEqual([join(dir, 'v002')]);
  });
});

describe('updateLatest and readLatest', () => {
  test('returns the highest version through a relative symlink that replaces the previous one', async () => {
    const dir = nameDir(['v001', 'v999']);
    await updateLatest(dir);
    expect(readlinkSync(join(dir, 'latest'))).toBe('v999');
    mkdirSync(join(dir, 'v1000'));
    await updateLatest(dir);
    expect([readlinkSync(join(dir, 'latest')), await readLatest(dir)]).toStrictEqual(['v1000', 'v1000']);
    expect(readdirSync(dir).sort()).toStrictEqual(['latest', 'v001', 'v1000', 'v999']);
  });

  test('returns no latest for a name without versions', async () => {
    const dir = nameDir([], ['v001']);
    await updateLatest(dir);
    expect([readdirSync(dir), await readLatest(dir)]).toStrictEqual([['v001'], undefined]);
  });

  test('returns the version from a text file where symlinks are refused', async () => {
    const dir = nameDir(['v001', 'v002']);
    await withPatched(
      fsp,
      'symlink',
      () => async () => Promise.reject(errno('EPERM')),
      () => updateLatest(dir),
    );
    expect(readFileSync(join(dir, 'latest'), 'utf8')).toBe('v002\n');
    expect(await readLatest(dir)).toBe('v002');
    expect(readdirSync(dir).sort()).toStrictEqual(['latest', 'v001', 'v002']);
  });

  test('rejects when latest cannot be replaced, leaving no temporary link behind', async () => {
    const dir = nameDir(['v001', 'latest']);
    writeFileSync(join(dir, 'latest', 'keep'), 'x');
    await expect(updateLatest(dir)).rejects.toThrow();
    expect(readdirSync(dir).sort()).toStrictEqual(['latest', 'v001']);
    expect(readdirSync(join(dir, 'latest'))).toStrictEqual(['keep']);
  });

  test('returns undefined for no latest and for an empty latest file, and the trimmed name from a file', async () => {
    const none = nameDir(['v001']);
    const empty = nameDir(['v001'], ['latest']);
    writeFileSync(join(empty, 'latest'), '\n');
    const text = nameDir(['v001', 'v002']);
    writeFileSync(join(text, 'latest'), 'v001\n');
    expect([await readLatest(none), await readLatest(empty), await readLatest(text)]).toStrictEqual([
      undefined,
      undefined,
      'v001',
    ]);
  });
});

describe('formatVersion and versionNumber', () => {
  test('returns v001 for 1 and back, and -1 for a name that is not a version', () => {
    expect([formatVersion(1), formatVersion(1234), versionNumber('v042'), versionNumber('v1234')]).toStrictEqual([
      'v001',
      'v1234',
      42,
      1234,
    ]);
    expect([versionNumber('latest'), versionNumber('v01'), versionNumber('xv001')]).toStrictEqual([-1, -1, -1]);
  });
});
