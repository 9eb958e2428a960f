import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { gitSha1, sha256, startModelHub, type ModelHub } from '../__fixtures__/model-hub.js';
import { tempDirs } from '../__fixtures__/temp-dirs.js';
import { InputError, ProviderError } from '../errors/index.js';
import { hubSnapshotDir } from '../util/hub-cache.js';
import { fetchHubModel, gitBlobSha1 } from './hub-fetch.js';

const tempDir = tempDirs('atk-hub-fetch-');
const weights = Buffer.alloc(300_000, 7);
weights.write('safetensors-ish', 0);
const FILES = {
  'config.json': Buffer.from('{"model_type": "qwen3"}\n'),
  'tokenizer.json': Buffer.from('{"version": "1.0"}\n'),
  'tokenizer_config.json': Buffer.from('{"chat_template": "{{ messages }}"}\n'),
  'model.safetensors': weights,
  'README.md': Buffer.from('# model card\n'),
  'pytorch_model.bin': Buffer.from('pickled weights atk never reads'),
  'onnx/model.onnx': Buffer.from('onnx'),
};
const WANTED = ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'];

let hub: ModelHub;
beforeAll(async () => {
  hub = await startModelHub('Org/Tiny', FILES, new Set(['model.safetensors', 'pytorch_model.bin']));
});
afterAll(() => hub.server.close());

const quiet = (): void => undefined;
const envFor = (cache: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({
  HF_ENDPOINT: hub.server.url,
  HF_HOME: cache,
  ...extra,
});

describe('fetchHubModel', () => {
  test('returns the snapshot in the Hugging Face cache layout with only what a model directory needs', async () => {
    const cache = tempDir();
    const summary = await fetchHubModel({ id: 'Org/Tiny', env: envFor(cache), print: quiet });
    const repo = join(cache, 'hub', 'models--Org--Tiny');
    expect(summary.dir).toBe(join(repo, 'snapshots', hub.commit));
    expect(summary.commit).toBe(hub.commit);
    expect(summary.files.map((f) => [f.path, f.how]).sort()).toStrictEqual(WANTED.map((p) => [p, 'downloaded']));
    expect(readdirSync(summary.dir).sort()).toStrictEqual(WANTED);
    expect(readFileSync(join(repo, 'refs', 'main'), 'utf8')).toBe(hub.commit);
    // blobs are named by the hub's hash, and the snapshot links to them relatively, as huggingface_hub's
    expect(readdirSync(join(repo, 'blobs')).sort()).toStrictEqual(
      [
        sha256(weights),
        ...['config.json', 'tokenizer.json', 'tokenizer_config.json'].map((f) => gitSha1(FILES[f as 'config.json'])),
      ].sort(),
    );
    const link = join(summary.dir, 'model.safetensors');
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readlinkSync(link)).toBe(`../../blobs/${sha256(weights)}`);
    expect(readFileSync(link).equals(weights)).toBe(true);
    // transformers, vLLM and atk's own model.path lookup find it by id
    expect(hubSnapshotDir('Org/Tiny', { HF_HUB_CACHE: join(cache, 'hub') })).toBe(summary.dir);
  });

  test('returns without downloading again when every blob is there and whole', async () => {
    const cache = tempDir();
    await fetchHubModel({ id: 'Org/Tiny', env: envFor(cache), print: quiet });
    const before = hub.server.requests.length;
    const again = await fetchHubModel({ id: 'Org/Tiny', env: envFor(cache), print: quiet });
    expect(again.files.every((f) => f.how === 'cached')).toBe(true);
    expect(hub.server.requests.slice(before).some((r) => r.path.includes('/resolve/'))).toBe(false);
  });

  test('returns the files copied into out as plain files', async () => {
    const cache = tempDir();
    const out = join(tempDir(), 'model');
    const summary = await fetchHubModel({ id: 'Org/Tiny', out, env: envFor(cache), print: quiet });
    expect(summary.dir).toBe(out);
    expect(readdirSync(out).sort()).toStrictEqual(WANTED);
    expect(lstatSync(join(out, 'model.safetensors')).isSymbolicLink()).toBe(false);
    expect(readFileSync(join(out, 'config.json')).equals(FILES['config.json'])).toBe(true);
  });

  test('sends HF_TOKEN as a bearer token', async () => {
    const cache = tempDir();
    const before = hub.server.requests.length;
    await fetchHubModel({ id: 'Org/Tiny', env: envFor(cache, { HF_TOKEN: 'hf_secret' }), print: quiet });
    const sent = hub.server.requests.slice(before);
    expect(sent.length).toBeGreaterThan(4);
    expect(sent.every((r) => r.headers.authorization === 'Bearer hf_secret')).toBe(true);
  });

  test('returns the whole file after an interrupted download resumes from its .incomplete file', async () => {
    const cache = tempDir();
    const path = hub.resolvePath('model.safetensors');
    hub.server.faults.cutAfter = { [path]: 100_000 };
    await expect(fetchHubModel({ id: 'Org/Tiny', env: envFor(cache), print: quiet })).rejects.toThrow(ProviderError);
    const incomplete = join(cache, 'hub', 'models--Org--Tiny', 'blobs', `${sha256(weights)}.incomplete`);
    expect(readFileSync(incomplete).length).toBe(100_000);
    const before = hub.server.requests.length;
    const lines: string[] = [];
    await fetchHubModel({ id: 'Org/Tiny', env: envFor(cache), print: (l) => lines.push(l) });
    const resumed = hub.server.requests.slice(before).find((r) => r.path === path);
    expect(resumed?.headers.range).toBe('bytes=100000-');
    expect(lines).toContain('model.safetensors: resuming at 0.1 MB of 0.3 MB');
    expect(existsSync(incomplete)).toBe(false);
    expect(readFileSync(join(cache, 'hub', 'models--Org--Tiny', 'blobs', sha256(weights))).equals(weights)).toBe(true);
  });

  test('rejects an LFS file or a plain file whose bytes differ from the hub hash, keeping nothing', async () => {
    for (const file of ['model.safetensors', 'config.json']) {
      const cache = tempDir();
      hub.server.faults.corrupt = new Set([hub.resolvePath(file)]);
      try {
        await expect(fetchHubModel({ id: 'Org/Tiny', env: envFor(cache), print: quiet })).rejects.toThrow(InputError);
      } finally {
        hub.server.faults.corrupt = undefined;
      }
      const blobs = readdirSync(join(cache, 'hub', 'models--Org--Tiny', 'blobs'));
      const hash = file === 'config.json' ? gitSha1(FILES['config.json']) : sha256(weights);
      expect(blobs.filter((b) => b.startsWith(hash))).toStrictEqual([]);
    }
  });

  test('rejects an unknown repository, a malformed id and a repository of GGUF files only, each in one line', async () => {
    const cache = tempDir();
    await expect(fetchHubModel({ id: 'Org/Missing', env: envFor(cache), print: quiet })).rejects.toThrow(
      /^Org\/Missing: not found on http:\/\/127\.0\.0\.1:\d+, or gated \(HTTP 404\)$/,
    );
    await expect(fetchHubModel({ id: 'not-an-id', env: envFor(cache), print: quiet })).rejects.toThrow(
      'not-an-id: not a hub model id (Org/Name)',
    );
    const gguf = await startModelHub('Org/Tiny-GGUF', { 'tiny.Q4_K_M.gguf': Buffer.from('gguf') }, new Set());
    try {
      const error = await fetchHubModel({
        id: 'Org/Tiny-GGUF',
        env: { HF_ENDPOINT: gguf.server.url, HF_HOME: cache },
        print: quiet,
      }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InputError);
      expect((error as InputError).message).toBe('Org/Tiny-GGUF has no safetensors weights at main');
      expect((error as InputError).hint).toBe(
        'it holds GGUF files: download one (e.g. tiny.Q4_K_M.gguf) and run atk model import <file.gguf> <dir>',
      );
    } finally {
      await gguf.server.close();
    }
  });

  test('rejects an unreachable hub with a ProviderError naming it', async () => {
    const cache = tempDir();
    await expect(
      fetchHubModel({ id: 'Org/Tiny', env: { HF_ENDPOINT: 'http://127.0.0.1:9', HF_HOME: cache }, print: quiet }),
    ).rejects.toThrow(/^cannot reach the hub at http:\/\/127\.0\.0\.1:9: /);
  });
});

describe('gitBlobSha1', () => {
  test('returns git hash-object of the file', async () => {
    const path = join(tempDir(), 'f');
    writeFileSync(path, 'hello\n');
    expect(await gitBlobSha1(path)).toBe('ce013625030ba8dba906f756967f9e9ca394464a'); // git hash-object
  });
});
