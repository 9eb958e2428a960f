import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startDeepCoderHub, type DeepCoderHub } from '../__fixtures__/deepcoder-hub.js';
import { InputError, ProviderError } from '../errors/index.js';
import { fullOrSlice } from '../__fixtures__/test-data.js';
import { dataDir } from '../util/paths.js';
import { deepcoderDataset } from './deepcoder.js';
import { fetchDeepCoder, loadManifest, type DeepCoderManifest } from './fetch-deepcoder.js';
import type { Task } from './types.js';

// The Hub is a loopback server holding codeforces/test and lcbv5/test shards built from the shared
// rLLM files at the shipped manifest's revision; the shipped manifest lists no shards for them,
// so their checksums come from the tree listing, as on huggingface.co.
let hub: DeepCoderHub;
let base = '';
beforeAll(async () => {
  hub = await startDeepCoderHub();
  base = hub.server.url;
});
afterAll(() => hub.server.close());

const out = (): string => mkdtempSync(join(tmpdir(), 'atk-fetch-deepcoder-'));
const testOnly = (): DeepCoderManifest => ({ ...loadManifest(), subsets: { codeforces: ['test'], lcbv5: ['test'] } });
const downloads = (shard: string): number =>
  hub.server.requests.filter((r) => r.path === hub.resolvePath(shard)).length;
const load = (path: string, options: Record<string, unknown> = {}): Promise<Task[]> =>
  deepcoderDataset.load('test', { recipeDir: '.', dataDir: '/nonexistent', seed: 0, options, path });

describe('fetchDeepCoder', () => {
  test('returns every codeforces and lcbv5 test problem as the bundled sample has it, with a lock of hub-checked sha256s', async () => {
    const dest = out();
    const lines: string[] = [];
    const summary = await fetchDeepCoder({
      dest,
      baseUrl: base,
      manifest: testOnly(),
      onProgress: (l) => lines.push(l),
    });
    expect(summary.outputs.map(({ subset, split, rows, skipped }) => ({ subset, split, rows, skipped }))).toStrictEqual(
      [
        { subset: 'codeforces', split: 'test', rows: fullOrSlice(408, 6), skipped: 0 },
        { subset: 'lcbv5', split: 'test', rows: fullOrSlice(279, 6), skipped: 0 },
      ],
    );
    expect(JSON.parse(readFileSync(join(dest, 'deepcoder.lock.json'), 'utf8'))).toStrictEqual({
      dataset: hub.dataset,
      revision: hub.revision,
      base_url: base,
      files: Object.entries(hub.shards).map(([path, bytes]) => ({
        path,
        sha256: hub.sha256(bytes),
        bytes: bytes.length,
        checked: 'hub',
      })),
    });
    expect(lines).toContain(
      'lcbv5/test-00001-of-00002.parquet: 100% of ' +
        `${(hub.shards['lcbv5/test-00001-of-00002.parquet'].length / 1e6).toFixed(1)} MB`,
    );

    // The fetched rows normalise to the very tasks of the shared sample (built independently from
    // the same rLLM files), functional LCB problems' fn_name from the starter code included; only
    // the public-test count differs: a Hub row's tests may include hidden ones.
    const fetched = await load(dest);
    // (The test/data slice's sample also holds later problems the hand-written solutions need.)
    const fetchedIds = new Set(fetched.map((t) => t.id));
    const sample = (
      await load(join(dataDir(), 'deepcoder', 'normalized', 'code_sample.jsonl'), { subsets: ['codeforces', 'lcbv5'] })
    ).filter((t) => fetchedIds.has(t.id));
    const withoutPublicCount = (tasks: Task[]): Task[] =>
      tasks.map((t) => ({
        ...t,
        data: Object.fromEntries(Object.entries(t.data).filter(([k]) => k !== 'public_test_count')),
      }));
    expect(fetched).toHaveLength(fullOrSlice(687, 12));
    expect(withoutPublicCount(fetched)).toStrictEqual(withoutPublicCount(sample));
    expect(fetched.filter((t) => (t.data as { fn_name?: string }).fn_name !== undefined)).toHaveLength(
      fullOrSlice(104, 1),
    );
  });

  test('returns the first rows only with limit, leaving shards past it undownloaded', async () => {
    const dest = out();
    const before = downloads('lcbv5/test-00001-of-00002.parquet');
    const limit = fullOrSlice(100, 2);
    const summary = await fetchDeepCoder({ dest, baseUrl: base, manifest: testOnly(), subsets: ['lcbv5'], limit });
    expect(summary.outputs.map((o) => o.rows)).toStrictEqual([limit]);
    expect(summary.files.map((f) => f.path)).toStrictEqual(['lcbv5/test-00000-of-00002.parquet']);
    expect(downloads('lcbv5/test-00001-of-00002.parquet')).toBe(before);
    expect((await load(dest)).map((t) => t.id)).toStrictEqual(
      Array.from({ length: limit }, (_, i) => `lcbv5_test_${i}`),
    );
  });

  test('returns the complete shard after an interrupted download resumes with a Range request', async () => {
    const dest = out();
    const shard = 'codeforces/test-00000-of-00001.parquet';
    hub.server.faults.cutAfter = { [hub.resolvePath(shard)]: Math.floor(hub.shards[shard].length / 2) };
    await expect(
      fetchDeepCoder({ dest, baseUrl: base, manifest: testOnly(), subsets: ['codeforces'] }),
    ).rejects.toThrow(ProviderError);
    const partial = statSync(join(dest, 'raw', `${shard}.part`)).size;
    expect(partial).toBeGreaterThan(0);
    expect(existsSync(join(dest, 'codeforces_test.jsonl'))).toBe(false);

    const lines: string[] = [];
    const summary = await fetchDeepCoder({
      dest,
      baseUrl: base,
      manifest: testOnly(),
      subsets: ['codeforces'],
      onProgress: (l) => lines.push(l),
    });
    expect(hub.server.requests.filter((r) => r.path === hub.resolvePath(shard)).at(-1)!.headers.range).toBe(
      `bytes=${partial}-`,
    );
    expect(lines[0]).toMatch(new RegExp(`^${shard}: resuming at ${(partial / 1e6).toFixed(1)} MB of `));
    expect(lines).toContain(`${shard}: resumed, sha256 ${hub.sha256(hub.shards[shard]).slice(0, 12)} ok (hub)`);
    expect(readFileSync(join(dest, 'raw', shard)).equals(hub.shards[shard])).toBe(true);
    expect(summary.outputs[0].rows).toBe(fullOrSlice(408, 6));
  });

  test('returns without downloading again when the shards are present and match', async () => {
    const dest = out();
    await fetchDeepCoder({ dest, baseUrl: base, manifest: testOnly(), subsets: ['lcbv5'] });
    const before = hub.server.requests.filter((r) => r.path.includes('/resolve/')).length;
    const lines: string[] = [];
    const again = await fetchDeepCoder({
      dest,
      baseUrl: base,
      manifest: testOnly(),
      subsets: ['lcbv5'],
      onProgress: (l) => lines.push(l),
    });
    expect(hub.server.requests.filter((r) => r.path.includes('/resolve/')).length).toBe(before);
    expect(again.outputs.map((o) => o.rows)).toStrictEqual([fullOrSlice(279, 6)]);
    expect(lines[0]).toMatch(/^lcbv5\/test-00000-of-00002\.parquet: present \(sha256 [0-9a-f]{12}\)$/);
  });

  test('rejects a shard whose sha256 differs from the manifest and keeps nothing', async () => {
    const dest = out();
    const wrong = {
      ...testOnly(),
      subsets: { codeforces: ['test'] },
      files: [{ path: 'codeforces/test-00000-of-00001.parquet', sha256: '0'.repeat(64) }],
    };
    const error = await fetchDeepCoder({ dest, baseUrl: base, manifest: wrong }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect((error as Error).message).toMatch(
      /^checksum mismatch for .*codeforces\/test-00000-of-00001\.parquet: expected sha256 0{64}/,
    );
    expect(readdirSync(join(dest, 'raw', 'codeforces'))).toStrictEqual([]);
    expect(existsSync(join(dest, 'codeforces_test.jsonl'))).toBe(false);
  });

  test('rejects a shard corrupted in transit against the Hub sha256', async () => {
    const dest = out();
    hub.server.faults.corrupt = new Set([hub.resolvePath('codeforces/test-00000-of-00001.parquet')]);
    try {
      await expect(
        fetchDeepCoder({ dest, baseUrl: base, manifest: testOnly(), subsets: ['codeforces'] }),
      ).rejects.toThrow(/^checksum mismatch/);
    } finally {
      hub.server.faults.corrupt = new Set();
    }
    expect(readdirSync(join(dest, 'raw', 'codeforces'))).toStrictEqual([]);
  });

  test('rejects an unknown subset and a revision the server does not have', async () => {
    await expect(
      fetchDeepCoder({ dest: out(), baseUrl: base, manifest: testOnly(), subsets: ['apps'] }),
    ).rejects.toThrow("unknown DeepCoder subset 'apps'");
    await expect(
      fetchDeepCoder({ dest: out(), baseUrl: base, manifest: { ...testOnly(), revision: 'deadbeef' } }),
    ).rejects.toThrow(/HTTP 404/);
  });
});

describe('loadManifest', () => {
  test('returns the shipped manifest with a pinned 40-hex revision and the four subsets', () => {
    const shipped = loadManifest();
    expect(shipped.revision).toMatch(/^[0-9a-f]{40}$/);
    expect(shipped.subsets).toStrictEqual({
      primeintellect: ['train'],
      taco: ['train'],
      lcbv5: ['train', 'test'],
      codeforces: ['test'],
    });
  });
});
