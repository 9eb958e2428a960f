import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { startDeepCoderHub } from '../__fixtures__/deepcoder-hub.js';
import { startFileServer, type FileServer } from '../__fixtures__/file-server.js';
import { gsm8kTestManifest } from '../__fixtures__/test-data.js';
import { InputError } from '../errors/index.js';
import { dataDir } from '../util/paths.js';
import { runDataFetch, runDataLs } from './data.js';
import { main } from './main.js';

const shared = (name: string): Buffer => readFileSync(join(dataDir(), 'gsm8k', name));
const manifest = gsm8kTestManifest();
let server: FileServer;

beforeAll(async () => {
  server = await startFileServer({ '/train.jsonl': shared('train.jsonl'), '/test.jsonl': shared('test.jsonl') });
});
afterAll(() => server.close());

describe('runDataFetch', () => {
  test('returns the destination after printing progress and a done line', async () => {
    const out = mkdtempSync(join(tmpdir(), 'atk-data-'));
    const lines: string[] = [];
    expect(
      await runDataFetch({
        name: 'gsm8k',
        out,
        baseUrl: server.url,
        manifestPath: manifest.path,
        limit: 3,
        print: (l) => lines.push(l),
      }),
    ).toBe(out);
    expect(lines.at(-1)).toBe(`gsm8k: done -> ${out}`);
    expect(lines).toContain(`test.jsonl: sha256 ok, 3 rows kept (--limit 3) -> ${join(out, 'test.jsonl')}`);
  });

  test('rejects --subset for a dataset that has none', async () => {
    await expect(
      runDataFetch({
        name: 'gsm8k',
        out: mkdtempSync(join(tmpdir(), 'atk-data-')),
        subsets: ['main'],
        baseUrl: server.url,
        print: () => {},
      }),
    ).rejects.toThrow('gsm8k has no subsets; --subset would do nothing');
  });

  test('rejects an unknown dataset name with the nearest one', async () => {
    const error = await runDataFetch({ name: 'gsm8', print: () => {} }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect((error as Error).message).toMatch(/unknown dataset fetcher 'gsm8' \(did you mean 'gsm8k'\?\)/);
  });
});

describe('runDataLs', () => {
  test('returns built-in datasets and fetchable ones with their location', async () => {
    const rows = await runDataLs();
    expect(rows.find((r) => r.name === 'arith')).toStrictEqual({ name: 'arith', fetchable: false });
    expect(rows.find((r) => r.name === 'gsm8k')).toMatchObject({
      name: 'gsm8k',
      fetchable: true,
      location: join(dataDir(), 'gsm8k'),
      present: true,
    });
    // Nothing fetched, but the dataset reads the public sample the data dir holds.
    expect(rows.find((r) => r.name === 'deepcoder')).toMatchObject({
      name: 'deepcoder',
      fetchable: true,
      location: join(dataDir(), 'deepcoder', 'fetched'),
      present: true,
    });
  });
});

describe('atk data', () => {
  test('returns exit code 0 and the files for `atk data fetch gsm8k --out --base-url`', async () => {
    const out = mkdtempSync(join(tmpdir(), 'atk-data-'));
    const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      await main(['data', 'fetch', 'gsm8k', '--out', out, '--base-url', server.url, '--manifest', manifest.path]);
    } finally {
      write.mockRestore();
    }
    expect(process.exitCode ?? 0).toBe(0);
    expect(readFileSync(join(out, 'train.jsonl')).equals(shared('train.jsonl'))).toBe(true);
    expect(existsSync(join(out, 'test.jsonl'))).toBe(true);
  });

  test('returns exit code 0 and normalised jsonl for `atk data fetch deepcoder --subset codeforces --limit 5`', async () => {
    const hub = await startDeepCoderHub();
    const out = mkdtempSync(join(tmpdir(), 'atk-data-'));
    const printed: string[] = [];
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => printed.push(String(chunk)) > 0);
    try {
      await main([
        'data',
        'fetch',
        'deepcoder',
        '--subset',
        'codeforces',
        '--limit',
        '5',
        '--out',
        out,
        '--base-url',
        hub.server.url,
      ]);
    } finally {
      write.mockRestore();
      await hub.server.close();
    }
    expect(process.exitCode ?? 0).toBe(0);
    expect(printed.at(-2)).toBe(`codeforces/test: 5 problems -> ${join(out, 'codeforces_test.jsonl')}\n`);
    expect(printed.at(-1)).toBe(`deepcoder: done -> ${out}\n`);
    const rows = readFileSync(join(out, 'codeforces_test.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string });
    expect(rows.map((r) => r.id)).toStrictEqual([
      'codeforces_test_0',
      'codeforces_test_1',
      'codeforces_test_2',
      'codeforces_test_3',
      'codeforces_test_4',
    ]);
    expect(existsSync(join(out, 'lcbv5_test.jsonl'))).toBe(false);
    expect(JSON.parse(readFileSync(join(out, 'deepcoder.lock.json'), 'utf8')).revision).toBe(hub.revision);
  });

  test('rejects a bad --limit with exit code 2', async () => {
    const write = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      await main(['data', 'fetch', 'gsm8k', '--limit', '0']);
      expect(process.exitCode).toBe(2);
      expect(String(write.mock.calls[0]?.[0])).toBe('--limit must be a positive whole number, got 0\n');
    } finally {
      write.mockRestore();
      process.exitCode = 0;
    }
  });
});
