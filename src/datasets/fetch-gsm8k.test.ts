import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startFileServer, type FileServer } from '../__fixtures__/file-server.js';
import { fullOrSlice, gsm8kTestManifest } from '../__fixtures__/test-data.js';
import { InputError, ProviderError } from '../errors/index.js';
import { dataDir } from '../util/paths.js';
import { fetchGsm8k } from './fetch-gsm8k.js';
import { gsm8kDataset } from './gsm8k.js';

// The shared verbatim copies stand in for raw.githubusercontent.com at the pinned commit (the
// test/data slices with a manifest of their checksums, when the full files are not there).
const shared = (name: string): Buffer => readFileSync(join(dataDir(), 'gsm8k', name));
const { manifest } = gsm8kTestManifest();
const mb = (name: string): string => `${(shared(name).length / 1e6).toFixed(1)} MB`;
let server: FileServer;

beforeAll(async () => {
  server = await startFileServer({
    '/data/train.jsonl': shared('train.jsonl'),
    '/data/test.jsonl': shared('test.jsonl'),
  });
});
afterAll(() => server.close());

const out = (): string => join(mkdtempSync(join(tmpdir(), 'atk-fetch-gsm8k-')), 'gsm8k');

describe('fetchGsm8k', () => {
  test('returns both verified splits with progress lines, and loads them as the gsm8k dataset', async () => {
    const dest = out();
    const lines: string[] = [];
    const summary = await fetchGsm8k({
      manifest,
      dest,
      baseUrl: `${server.url}/data/`,
      onProgress: (l) => lines.push(l),
    });
    expect(summary).toStrictEqual({
      dest,
      files: [
        { name: 'train.jsonl', path: join(dest, 'train.jsonl'), rows: fullOrSlice(7473, 40), how: 'fresh' },
        { name: 'test.jsonl', path: join(dest, 'test.jsonl'), rows: fullOrSlice(1319, 40), how: 'fresh' },
      ],
    });
    expect(readFileSync(join(dest, 'train.jsonl')).equals(shared('train.jsonl'))).toBe(true);
    expect(lines).toContain(`train.jsonl: 100% of ${mb('train.jsonl')}`);
    expect(lines).toContain(`test.jsonl: sha256 ok, ${fullOrSlice(1319, 40)} rows -> ${join(dest, 'test.jsonl')}`);
    expect(
      await gsm8kDataset.load('test', { recipeDir: '.', dataDir: '.', path: dest, seed: 0, options: {} }),
    ).toHaveLength(fullOrSlice(1319, 40));

    const again: string[] = [];
    const before = server.requests.length;
    await fetchGsm8k({ manifest, dest, baseUrl: `${server.url}/data`, onProgress: (l) => again.push(l) });
    expect(server.requests.length).toBe(before);
    expect(again[0]).toMatch(/^train\.jsonl: already present, sha256 ok/);
  });

  test('returns the complete file after an interrupted download resumes with a Range request', async () => {
    const dest = out();
    server.faults.cutAfter = { '/data/train.jsonl': Math.floor(shared('train.jsonl').length / 2) };
    await expect(fetchGsm8k({ manifest, dest, baseUrl: `${server.url}/data` })).rejects.toThrow(ProviderError);
    const partial = statSync(join(dest, 'train.jsonl.part')).size;
    expect(partial).toBeGreaterThan(0);
    expect(existsSync(join(dest, 'train.jsonl'))).toBe(false);

    const lines: string[] = [];
    const summary = await fetchGsm8k({
      manifest,
      dest,
      baseUrl: `${server.url}/data`,
      onProgress: (l) => lines.push(l),
    });
    expect(summary.files.map((f) => f.how)).toStrictEqual(['resumed', 'fresh']);
    expect(server.requests.filter((r) => r.path === '/data/train.jsonl').at(-1)!.headers.range).toBe(
      `bytes=${partial}-`,
    );
    expect(lines[0]).toBe(`train.jsonl: resuming at ${(partial / 1e6).toFixed(1)} MB of ${mb('train.jsonl')}`);
    expect(readFileSync(join(dest, 'train.jsonl')).equals(shared('train.jsonl'))).toBe(true);
  });

  test('rejects a corrupted file, keeping neither it nor its partial download', async () => {
    const dest = out();
    server.faults.corrupt = new Set(['/data/test.jsonl']);
    try {
      const error = await fetchGsm8k({ manifest, dest, baseUrl: `${server.url}/data` }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InputError);
      expect((error as Error).message).toMatch(
        new RegExp(
          `^checksum mismatch for http://127\\.0\\.0\\.1:\\d+/data/test\\.jsonl: expected sha256 ${manifest.files[1]!.sha256}`,
        ),
      );
    } finally {
      server.faults.corrupt = new Set();
    }
    expect(existsSync(join(dest, 'train.jsonl'))).toBe(true);
    expect(existsSync(join(dest, 'test.jsonl'))).toBe(false);
    expect(existsSync(join(dest, 'test.jsonl.part'))).toBe(false);
  });

  test('returns only the first rows of each split with limit', async () => {
    const dest = out();
    const summary = await fetchGsm8k({ manifest, dest, baseUrl: `${server.url}/data`, limit: 5 });
    expect(summary.files.map((f) => f.rows)).toStrictEqual([5, 5]);
    const tasks = await gsm8kDataset.load('train', { recipeDir: '.', dataDir: '.', path: dest, seed: 0, options: {} });
    const all = await gsm8kDataset.load('train', { recipeDir: '.', dataDir: dataDir(), seed: 0, options: {} });
    expect(tasks).toStrictEqual(all.slice(0, 5));
  });

  test('rejects a base URL that does not serve the files', async () => {
    await expect(fetchGsm8k({ manifest, dest: out(), baseUrl: `${server.url}/elsewhere` })).rejects.toThrow(/HTTP 404/);
  });
});
