import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startFileServer, type FileServer } from '../__fixtures__/file-server.js';
import { CancelledError, InputError, ProviderError } from '../errors/index.js';
import { downloadResumable, type DownloadProgress } from './resumable-download.js';

const body = randomBytes(1_500_000);
const sha256 = createHash('sha256').update(body).digest('hex');
let server: FileServer;

beforeAll(async () => {
  server = await startFileServer({ '/blob.bin': body });
});
afterAll(() => server.close());

const fresh = (): string => join(mkdtempSync(join(tmpdir(), 'atk-dl-')), 'sub', 'blob.bin');

describe('downloadResumable', () => {
  test('returns a verified file, renamed into place, with progress up to the total', async () => {
    const dest = fresh();
    const progress: DownloadProgress[] = [];
    const outcome = await downloadResumable({
      url: `${server.url}/blob.bin`,
      dest,
      sha256,
      onProgress: (p) => progress.push(p),
    });
    expect(outcome).toStrictEqual({ path: dest, bytes: body.length, sha256, how: 'fresh' });
    expect(readFileSync(dest).equals(body)).toBe(true);
    expect(existsSync(`${dest}.part`)).toBe(false);
    expect(progress.at(-1)).toStrictEqual({ received: body.length, total: body.length, resumedFrom: 0 });
  });

  test('returns cached without a request when the file already has the checksum', async () => {
    const dest = fresh();
    await downloadResumable({ url: `${server.url}/blob.bin`, dest, sha256 });
    const before = server.requests.length;
    expect((await downloadResumable({ url: `${server.url}/blob.bin`, dest, sha256 })).how).toBe('cached');
    expect(server.requests.length).toBe(before);
  });

  test('returns a resumed file after an interrupted transfer, asking only for the missing bytes', async () => {
    const dest = fresh();
    server.faults.cutAfter = { '/blob.bin': 600_000 };
    const error = await downloadResumable({ url: `${server.url}/blob.bin`, dest, sha256 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as Error).message).toMatch(/interrupted after \d+ bytes .*run again to resume/);
    const kept = statSync(`${dest}.part`).size;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThanOrEqual(600_000);
    expect(existsSync(dest)).toBe(false);

    const outcome = await downloadResumable({ url: `${server.url}/blob.bin`, dest, sha256, bytes: body.length });
    expect(outcome.how).toBe('resumed');
    expect(server.requests.at(-1)!.headers.range).toBe(`bytes=${kept}-`);
    expect(readFileSync(dest).equals(body)).toBe(true);
  });

  test('returns a fresh file when the server ignores the Range request', async () => {
    const dest = fresh();
    server.faults.cutAfter = { '/blob.bin': 300_000 };
    await expect(downloadResumable({ url: `${server.url}/blob.bin`, dest, sha256 })).rejects.toThrow(ProviderError);
    server.faults.ignoreRange = true;
    try {
      expect((await downloadResumable({ url: `${server.url}/blob.bin`, dest, sha256 })).how).toBe('fresh');
    } finally {
      server.faults.ignoreRange = false;
    }
    expect(readFileSync(dest).equals(body)).toBe(true);
  });

  test('returns the file when a complete .part is left from an earlier run, without a request', async () => {
    const dest = fresh();
    await downloadResumable({ url: `${server.url}/blob.bin`, dest, sha256 });
    writeFileSync(`${dest}.part`, readFileSync(dest));
    writeFileSync(dest, 'stale');
    const before = server.requests.length;
    expect((await downloadResumable({ url: `${server.url}/blob.bin`, dest, sha256, bytes: body.length })).how).toBe(
      'resumed',
    );
    expect(server.requests.length).toBe(before);
    expect(readFileSync(dest).equals(body)).toBe(true);
  });

  test('returns the file and its sha256 without a known checksum, starting over instead of resuming', async () => {
    const dest = fresh();
    mkdirSync(dirname(dest), { recursive: true });
    writeFileSync(`${dest}.part`, 'stale bytes of another file');
    const outcome = await downloadResumable({ url: `${server.url}/blob.bin`, dest });
    expect(outcome).toStrictEqual({ path: dest, bytes: body.length, sha256, how: 'fresh' });
    expect(server.requests.at(-1)!.headers.range).toBeUndefined();
    expect(readFileSync(dest).equals(body)).toBe(true);
  });

  test('rejects a corrupted file and keeps nothing of it', async () => {
    const dest = fresh();
    server.faults.corrupt = new Set(['/blob.bin']);
    try {
      await expect(downloadResumable({ url: `${server.url}/blob.bin`, dest, sha256 })).rejects.toThrow(InputError);
      await expect(downloadResumable({ url: `${server.url}/blob.bin`, dest, sha256 })).rejects.toThrow(
        /checksum mismatch .* expected sha256 [0-9a-f]{64}, got [0-9a-f]{64}/,
      );
    } finally {
      server.faults.corrupt = new Set();
    }
    expect(existsSync(dest)).toBe(false);
    expect(existsSync(`${dest}.part`)).toBe(false);
  });

  test('rejects HTTP errors and cancellation', async () => {
    await expect(downloadResumable({ url: `${server.url}/missing.bin`, dest: fresh(), sha256 })).rejects.toThrow(
      /HTTP 404/,
    );
    const controller = new AbortController();
    controller.abort();
    await expect(
      downloadResumable({ url: `${server.url}/blob.bin`, dest: fresh(), sha256, signal: controller.signal }),
    ).rejects.toThrow(CancelledError);
  });
});
