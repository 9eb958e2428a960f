import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { writeFileAtomic } from '../runs/atomic.js';
import { dataDir, projectRoot } from '../util/paths.js';
import type { DatasetFetcher, FetchOptions } from './fetchers.js';
import { checkPinnedFiles, downloadPinnedFile, pinnedManifestSchema, readManifest } from './pinned-files.js';
import type { DownloadOutcome } from './resumable-download.js';

const ManifestSchema = pinnedManifestSchema('gsm8k', {
  path: z.string(),
  rows: z.number().int().positive(),
});
/** `datasets/gsm8k/manifest.json`: the pinned source revision and each file's size, rows and sha256. */
export type Gsm8kManifest = z.infer<typeof ManifestSchema>;

/** One fetched split file. */
export interface Gsm8kFetchedFile {
  readonly name: string;
  readonly path: string;
  readonly rows: number;
  readonly how: DownloadOutcome['how'];
}

export interface Gsm8kFetchSummary {
  readonly dest: string;
  readonly files: readonly Gsm8kFetchedFile[];
}

/** The fetcher `atk data fetch gsm8k` runs. */
export const gsm8kFetcher: DatasetFetcher = {
  name: 'gsm8k',
  description: 'GSM8K grade-school math (openai/grade-school-math, MIT): train 7,473 / test 1,319 problems, 4.9 MB',
  defaultDest: () => join(dataDir(), 'gsm8k'),
  fetch: (options) => fetchGsm8k(options),
  check: (dest, manifestPath) => checkPinnedFiles(dest, loadGsm8kManifest(manifestPath).files),
};

/**
 * Downloads GSM8K's `train.jsonl` and `test.jsonl` from the canonical repository at the manifest's
 * pinned commit (or `baseUrl`, a mirror serving the same file names), resuming partial downloads,
 * and keeps each file only when its sha256 matches. `limit` then keeps the first N rows of each.
 * @throws ProviderError on network/HTTP failures (partial files are kept for the next run);
 * InputError on a checksum mismatch; CancelledError when aborted.
 */
export async function fetchGsm8k(
  options: FetchOptions & { readonly manifest?: Gsm8kManifest } = {},
): Promise<Gsm8kFetchSummary> {
  const manifest = options.manifest ?? loadGsm8kManifest(options.manifestPath);
  const dest = options.dest ?? join(dataDir(), 'gsm8k');
  const base = (options.baseUrl ?? manifest.base_url).replace(/\/+$/, '');
  const say = options.onProgress ?? (() => undefined);
  const files: Gsm8kFetchedFile[] = [];
  for (const file of manifest.files) {
    const { path, how } = await downloadPinnedFile(file, `${base}/${file.name}`, dest, say, options.signal);
    const rows = options.limit === undefined ? file.rows : await keepFirstRows(path, options.limit);
    say(
      `${file.name}: ${how === 'cached' ? 'already present, ' : ''}sha256 ok, ${rows} rows${options.limit === undefined ? '' : ` kept (--limit ${options.limit})`} -> ${path}`,
    );
    files.push({ name: file.name, path, rows, how });
  }
  return { dest, files };
}

/**
 * Reads and checks the shipped manifest.
 * @throws InputError when it is missing or malformed.
 */
export function loadGsm8kManifest(path = join(projectRoot(), 'datasets', 'gsm8k', 'manifest.json')): Gsm8kManifest {
  return readManifest(path, ManifestSchema, 'GSM8K');
}

/** Rewrite `path` with its first `limit` lines (atomically); returns the rows kept. */
async function keepFirstRows(path: string, limit: number): Promise<number> {
  const lines = (await readFile(path, 'utf8')).split('\n').filter((line) => line.trim() !== '');
  const kept = lines.slice(0, limit);
  await writeFileAtomic(path, kept.map((line) => `${line}\n`).join(''));
  return kept.length;
}
