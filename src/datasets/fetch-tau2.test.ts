import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startFileServer, type FileServer } from '../__fixtures__/file-server.js';
import { fullData, fullOrSlice, tau2TestManifest } from '../__fixtures__/test-data.js';
import { InputError, ProviderError } from '../errors/index.js';
import { dataDir } from '../util/paths.js';
import { fetchTau2, loadTau2Manifest, tau2Fetcher } from './fetch-tau2.js';
import { fileSha256 } from './resumable-download.js';
import { tau2Dataset } from './tau2.js';

// A loopback stand-in for raw.githubusercontent.com/sierra-research/tau2-bench: each file of the
// manifest at /<commit>/<upstream path>, with the bytes of the data dir's copy (the shared full
// files, or the test/data slices with a manifest of their checksums).
const { manifest, path: manifestPath } = tau2TestManifest();
const local = (name: string): Buffer => readFileSync(join(dataDir(), 'tau2', name));
const urlPath = (f: (typeof manifest.files)[number]): string => `/${f.commit ?? manifest.revision}/${f.path}`;
let server: FileServer;

beforeAll(async () => {
  server = await startFileServer(Object.fromEntries(manifest.files.map((f) => [urlPath(f), local(f.name)])));
});
afterAll(() => server.close());

const out = (): string => join(mkdtempSync(join(tmpdir(), 'atk-fetch-tau2-')), 'tau2');

describe('fetchTau2', () => {
  test('returns every pinned file at its upstream path, verified, in the layout the tau2 dataset loads', async () => {
    const dest = out();
    const lines: string[] = [];
    const summary = await fetchTau2({ dest, manifest, baseUrl: server.url, onProgress: (l) => lines.push(l) });
    expect(summary.files.map((f) => [f.name, f.how])).toStrictEqual(manifest.files.map((f) => [f.name, 'fresh']));
    for (const f of manifest.files) expect(readFileSync(join(dest, f.name)).equals(local(f.name))).toBe(true);
    expect(server.requests.map((r) => r.path)).toContain(
      '/37199f36924c8896f5e048360691f8476cd89ba1/data/tau2/domains/retail/tasks.json',
    );
    expect(server.requests.map((r) => r.path)).toContain(
      '/a2c024725189473d2d7cea3a5cfdbcc67478e41f/data/tau2/domains/airline/db.json',
    );
    expect(lines).toContain(`domains/retail/db.json: sha256 ok -> ${join(dest, 'domains/retail/db.json')}`);

    // The fetched folder is a data dir's tau2/: the dataset reads tasks, policy and guidelines from it.
    const ctx = { recipeDir: '.', dataDir: join(dest, '..'), seed: 0 };
    const retail = await tau2Dataset.load('test', { ...ctx, options: { domain: 'retail' } });
    const airline = await tau2Dataset.load('all', { ...ctx, options: { domain: 'airline', release: '2025-06-10' } });
    expect([retail.length, airline.length]).toStrictEqual(fullOrSlice([40, 50], [2, 7]));
    expect(await tau2Fetcher.check!(dest, manifestPath)).toStrictEqual({
      state: 'verified',
      detail: `${manifest.files.length} files, sha256 ok`,
    });

    const before = server.requests.length;
    const again: string[] = [];
    await fetchTau2({ dest, manifest, baseUrl: server.url, onProgress: (l) => again.push(l) });
    expect(server.requests.length).toBe(before);
    expect(again[0]).toBe(`LICENSE.tau2-bench: already present, sha256 ok -> ${join(dest, 'LICENSE.tau2-bench')}`);
  });

  test('returns the complete database after an interrupted download resumes with a Range request', async () => {
    const dest = out();
    const db = manifest.files.find((f) => f.name === 'domains/airline/db.json')!;
    server.faults.cutAfter = { [urlPath(db)]: Math.floor(db.bytes / 2) };
    await expect(fetchTau2({ dest, manifest, baseUrl: server.url })).rejects.toThrow(ProviderError);
    const partial = statSync(join(dest, 'domains/airline/db.json.part')).size;
    expect(partial).toBeGreaterThan(0);
    expect(existsSync(join(dest, 'domains/airline/db.json'))).toBe(false);

    const summary = await fetchTau2({ dest, manifest, baseUrl: server.url });
    expect(summary.files.find((f) => f.name === db.name)!.how).toBe('resumed');
    expect(server.requests.filter((r) => r.path === urlPath(db)).at(-1)!.headers.range).toBe(`bytes=${partial}-`);
    expect(await fileSha256(join(dest, db.name))).toBe(db.sha256);
  });

  test('rejects a file corrupted in transit and keeps neither it nor its partial download', async () => {
    const dest = out();
    const policy = manifest.files.find((f) => f.name === 'domains/retail/policy.md')!;
    server.faults.corrupt = new Set([urlPath(policy)]);
    try {
      const error = await fetchTau2({ dest, manifest, baseUrl: server.url }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InputError);
      expect((error as Error).message).toBe(
        `checksum mismatch for ${server.url}${urlPath(policy)}: expected sha256 ${policy.sha256}, got ${(error as Error).message.split(' got ')[1]}`,
      );
    } finally {
      server.faults.corrupt = new Set();
    }
    expect(existsSync(join(dest, policy.name))).toBe(false);
    expect(existsSync(join(dest, `${policy.name}.part`))).toBe(false);
  });

  test('rejects --limit, which would cut a database its tasks refer to', async () => {
    await expect(fetchTau2({ dest: out(), manifest, baseUrl: server.url, limit: 3 })).rejects.toThrow(
      /tau2 has no --limit/,
    );
  });
});

describe('tau2Fetcher.check', () => {
  test('returns missing for an empty folder and mismatch for an edited file', async () => {
    const dest = out();
    expect((await tau2Fetcher.check!(dest, manifestPath)).state).toBe('missing');
    await fetchTau2({ dest, manifest, baseUrl: server.url });
    writeFileSync(join(dest, 'domains/retail/policy.md'), 'edited');
    expect(await tau2Fetcher.check!(dest, manifestPath)).toStrictEqual({
      state: 'mismatch',
      detail: `sha256 differs for 1 of ${manifest.files.length} files (first: domains/retail/policy.md)`,
    });
  });
});

describe('datasets/tau2/manifest.json', () => {
  test('returns the sha256 of the shared verbatim copies at the pinned commits (against the slices: of the files they copy whole)', async () => {
    const shipped = loadTau2Manifest();
    expect([shipped.revision, shipped.base_url]).toStrictEqual([
      'a2c024725189473d2d7cea3a5cfdbcc67478e41f',
      'https://raw.githubusercontent.com/sierra-research/tau2-bench',
    ]);
    const verbatim = fullData
      ? shipped.files
      : shipped.files.filter((f) => /policy\.md$|simulation_guidelines|LICENSE/.test(f.name));
    expect(verbatim.length).toBeGreaterThanOrEqual(5);
    for (const f of verbatim)
      expect([f.name, await fileSha256(join(dataDir(), 'tau2', f.name))]).toStrictEqual([f.name, f.sha256]);
  });
});
