import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { CodeTaskData } from './code-tests.js';
import { deepcoderDataset } from './deepcoder.js';
import { fetchDeepCoder, loadManifest, type DeepCoderManifest } from './fetch-deepcoder.js';

const REV = '0123456789abcdef0123456789abcdef01234567';
const ID = 'agentica-org/DeepCoder-Preview-Dataset';

/** One lcbv5-shaped parquet shard with `n` problems numbered from `first`. */
function shard(first: number, n: number): Buffer {
  const ids = Array.from({ length: n }, (_, i) => first + i);
  const buffer = parquetWriteBuffer({
    columnData: [
      { name: 'problem', data: ids.map((i) => `Print ${i} plus the input.`), type: 'STRING' },
      { name: 'tests', data: ids.map((i) => JSON.stringify([{ input: '1\n', output: `${i + 1}\n`, testtype: 'stdin' }])), type: 'STRING' },
      { name: 'starter_code', data: ids.map(() => ''), type: 'STRING' },
      { name: 'metadata', data: ids.map(() => '{}'), type: 'STRING' },
    ],
  });
  return Buffer.from(buffer);
}

const files: Record<string, Buffer> = {
  'lcbv5/train-00000-of-00001.parquet': shard(0, 2),
  'lcbv5/test-00000-of-00002.parquet': shard(100, 2),
  'lcbv5/test-00001-of-00002.parquet': shard(200, 2),
};
const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const requests: string[] = [];
let server: Server;
let base = '';

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = req.url ?? '';
    requests.push(url);
    if (url === `/api/datasets/${ID}/tree/${REV}/lcbv5`) {
      const listing = [{ type: 'directory', path: 'lcbv5/extra' }, ...Object.entries(files).map(([path, b]) => ({ type: 'file', path, size: b.length, lfs: { oid: sha(b), size: b.length } }))];
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(listing));
      return;
    }
    const prefix = `/datasets/${ID}/resolve/${REV}/`;
    const body = url.startsWith(prefix) ? files[url.slice(prefix.length)] : undefined;
    if (body) res.writeHead(200, { 'content-length': body.length }).end(body);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const manifest: DeepCoderManifest = { dataset: ID, revision: REV, subsets: { lcbv5: ['train', 'test'] }, files: [] };

describe('fetchDeepCoder', () => {
  test('returns normalised jsonl and a lock with hub-checked sha256, stopping at the row limit', async () => {
    const dest = mkdtempSync(join(tmpdir(), 'atk-fetch-'));
    const summary = await fetchDeepCoder({ dest, baseUrl: base, manifest, limit: 3 });
    expect(summary.outputs.map(({ subset, split, rows, skipped }) => ({ subset, split, rows, skipped }))).toStrictEqual([
      { subset: 'lcbv5', split: 'train', rows: 2, skipped: 0 },
      { subset: 'lcbv5', split: 'test', rows: 3, skipped: 0 },
    ]);
    const lock = JSON.parse(readFileSync(join(dest, 'deepcoder.lock.json'), 'utf8'));
    expect(lock).toStrictEqual({
      dataset: ID,
      revision: REV,
      base_url: base,
      files: Object.entries(files).map(([path, b]) => ({ path, sha256: sha(b), bytes: b.length, checked: 'hub' })),
    });
    const tasks = await deepcoderDataset.load('test', { recipeDir: '.', dataDir: '/nonexistent', seed: 0, options: {}, path: dest });
    expect(tasks.map((t) => t.id)).toStrictEqual(['lcbv5_test_0', 'lcbv5_test_1', 'lcbv5_test_2']);
    expect((tasks[2].data as unknown as CodeTaskData).tests).toStrictEqual([{ input: '1\n', output: '201\n', kind: 'stdin' }]);
  });

  test('returns without downloading again when the shards are present and match', async () => {
    const dest = mkdtempSync(join(tmpdir(), 'atk-fetch-'));
    await fetchDeepCoder({ dest, baseUrl: base, manifest, subsets: ['lcbv5'] });
    const before = requests.filter((r) => r.includes('/resolve/')).length;
    const again = await fetchDeepCoder({ dest, baseUrl: base, manifest, subsets: ['lcbv5'] });
    expect(requests.filter((r) => r.includes('/resolve/')).length).toBe(before);
    expect(again.outputs.map((o) => o.rows)).toStrictEqual([2, 4]);
  });

  test('rejects a checksum mismatch against the manifest and keeps nothing', async () => {
    const dest = mkdtempSync(join(tmpdir(), 'atk-fetch-'));
    const wrong = { ...manifest, subsets: { lcbv5: ['train'] }, files: [{ path: 'lcbv5/train-00000-of-00001.parquet', sha256: '0'.repeat(64) }] };
    await expect(fetchDeepCoder({ dest, baseUrl: base, manifest: wrong })).rejects.toThrow(/checksum mismatch .* expected sha256 0{64}/);
    expect(readdirSync(join(dest, 'raw', 'lcbv5'))).toStrictEqual([]);
    expect(existsSync(join(dest, 'lcbv5_train.jsonl'))).toBe(false);
  });

  test('rejects an unknown subset and an HTTP failure', async () => {
    await expect(fetchDeepCoder({ dest: mkdtempSync(join(tmpdir(), 'atk-fetch-')), baseUrl: base, manifest, subsets: ['apps'] })).rejects.toThrow("unknown DeepCoder subset 'apps'");
    const missing = { ...manifest, revision: 'deadbeef' };
    await expect(fetchDeepCoder({ dest: mkdtempSync(join(tmpdir(), 'atk-fetch-')), baseUrl: base, manifest: missing })).rejects.toThrow(/HTTP 404/);
  });
});

describe('loadManifest', () => {
  test('returns the shipped manifest with a pinned 40-hex revision and the four subsets', () => {
    const shipped = loadManifest();
    expect(shipped.revision).toMatch(/^[0-9a-f]{40}$/);
    expect(shipped.subsets).toStrictEqual({ primeintellect: ['train'], taco: ['train'], lcbv5: ['train', 'test'], codeforces: ['test'] });
  });
});
