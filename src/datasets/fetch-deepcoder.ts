import { existsSync, readFileSync } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { z } from 'zod';
import { InputError } from '../errors/index.js';
import { writeFileAtomic, writeJsonAtomic } from '../runs/atomic.js';
import { dataDir, projectRoot } from '../util/paths.js';
import { recordFromDeepCoderRow, type CodeProblemRecord } from './code-records.js';
import { fetchJson } from './download.js';
import type { DatasetFetcher, FetchOptions } from './fetchers.js';
import { checkPinnedFiles, nonEmptyDir } from './pinned-files.js';
import { downloadResumable, fileSha256, progressLines } from './resumable-download.js';

const ManifestSchema = z.object({
  dataset: z.string(),
  revision: z.string(),
  subsets: z.record(z.string(), z.array(z.string())),
  files: z.array(z.object({ path: z.string(), sha256: z.string().regex(/^[0-9a-f]{64}$/) })).default([]),
});
/** `datasets/deepcoder/manifest.json`: dataset id, pinned revision, subsets/splits and known checksums. */
export type DeepCoderManifest = z.infer<typeof ManifestSchema>;

/**
 * `dest` receives `<subset>_<split>.jsonl`, `raw/<subset>/*.parquet` and `deepcoder.lock.json`
 * (default `<data>/deepcoder/fetched`); `subsets` picks among primeintellect, taco, lcbv5,
 * codeforces (default all); `limit` is the most rows per subset and split (shards past it are not
 * downloaded); `baseUrl` is the Hub endpoint (default $HF_ENDPOINT, else https://huggingface.co).
 */
export interface DeepCoderFetchOptions extends FetchOptions {
  readonly manifest?: DeepCoderManifest;
}

/** A fetched shard, as `deepcoder.lock.json` records it. */
export interface LockedFile {
  readonly path: string;
  readonly sha256: string;
  readonly bytes: number;
  /** What the checksum was checked against: the manifest, the Hub's LFS metadata, or nothing (recorded only). */
  readonly checked: 'manifest' | 'hub' | 'recorded';
}

export interface DeepCoderFetchSummary {
  readonly dest: string;
  readonly outputs: Array<{ subset: string; split: string; path: string; rows: number; skipped: number }>;
  readonly files: LockedFile[];
}

/** The fetcher `atk data fetch deepcoder [--subset ...] [--limit N]` runs. */
export const deepcoderFetcher: DatasetFetcher = {
  name: 'deepcoder',
  description:
    'DeepCoder-Preview-Dataset (primeintellect, taco, lcbv5, codeforces) as normalised jsonl; several GB in full (--subset, --limit)',
  subsets: ['primeintellect', 'taco', 'lcbv5', 'codeforces'],
  defaultDest: (): string => join(dataDir(), 'deepcoder', 'fetched'),
  fetch: (options) => fetchDeepCoder(options),
  // The dataset reads fetched files, else the normalised public sample where the data dir has one.
  present: () =>
    nonEmptyDir(join(dataDir(), 'deepcoder', 'fetched')) ||
    existsSync(join(dataDir(), 'deepcoder', 'normalized', 'code_sample.jsonl')),
  // The shards the last fetch recorded in its lock file, against the checksums it computed then.
  check: (dest) =>
    checkPinnedFiles(
      join(dest, 'raw'),
      [...readLock(join(dest, 'deepcoder.lock.json'))].map(([name, sha256]) => ({ name, sha256 })),
    ),
};

/**
 * Downloads the DeepCoder parquet shards at the manifest's pinned revision (streamed to disk,
 * resumed from a `.part` file after an interruption, sha256-checked), converts rows to normalised
 * jsonl the `deepcoder` dataset reads, and writes a lock file with every checksum. Already present shards whose checksum still matches are reused.
 * @throws InputError on an unknown subset, a checksum mismatch or unreadable parquet; ProviderError on HTTP failures
 * (a partial shard is kept for the next run); CancelledError when aborted.
 */
export async function fetchDeepCoder(options: DeepCoderFetchOptions = {}): Promise<DeepCoderFetchSummary> {
  const manifest = options.manifest ?? loadManifest(options.manifestPath);
  const dest = options.dest ?? join(dataDir(), 'deepcoder', 'fetched');
  const base = (options.baseUrl ?? process.env.HF_ENDPOINT ?? 'https://huggingface.co').replace(/\/+$/, '');
  const subsets = options.subsets ?? Object.keys(manifest.subsets);
  for (const subset of subsets) {
    if (!manifest.subsets[subset])
      throw new InputError(`unknown DeepCoder subset '${subset}'`, {
        hint: `choose from ${Object.keys(manifest.subsets).join(', ')}`,
      });
  }
  const say = options.onProgress ?? (() => undefined);
  const lockPath = join(dest, 'deepcoder.lock.json');
  const previous = readLock(lockPath);
  const files: LockedFile[] = [];
  const outputs: DeepCoderFetchSummary['outputs'] = [];
  await mkdir(dest, { recursive: true });
  for (const subset of subsets) {
    for (const split of manifest.subsets[subset]) {
      const shards = await listShards(manifest, base, subset, split, options.signal);
      const records: CodeProblemRecord[] = [];
      let skipped = 0;
      for (const shard of shards) {
        if (options.limit !== undefined && records.length >= options.limit) break;
        const local = join(dest, 'raw', shard.path);
        const locked = await ensureShard(
          shard,
          local,
          `${base}/datasets/${manifest.dataset}/resolve/${manifest.revision}/${shard.path}`,
          previous,
          say,
          options.signal,
        );
        files.push(locked);
        const rows = await readRows(local, options.limit === undefined ? undefined : options.limit - records.length);
        for (const row of rows) {
          try {
            records.push(recordFromDeepCoderRow(row, subset, split, records.length + skipped));
          } catch (error) {
            if (!(error instanceof InputError)) throw error;
            skipped++;
          }
        }
      }
      const out = join(dest, `${subset}_${split}.jsonl`);
      await writeFileAtomic(out, records.map((r) => JSON.stringify(r)).join('\n') + (records.length ? '\n' : ''));
      say(
        `${subset}/${split}: ${records.length} problems -> ${out}${skipped ? ` (${skipped} malformed rows skipped)` : ''}`,
      );
      outputs.push({ subset, split, path: out, rows: records.length, skipped });
    }
  }
  await writeJsonAtomic(lockPath, { dataset: manifest.dataset, revision: manifest.revision, base_url: base, files });
  return { dest, outputs, files };
}

/** The shipped manifest. @throws InputError when it is missing or malformed. */
export function loadManifest(
  path: string = join(projectRoot(), 'datasets', 'deepcoder', 'manifest.json'),
): DeepCoderManifest {
  const parsed = ManifestSchema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
  if (!parsed.success) throw new InputError(`${path}: invalid manifest: ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}

interface Shard {
  readonly path: string;
  readonly sha256?: string;
  /** Size from the Hub listing, for progress and for a complete `.part`. */
  readonly bytes?: number;
  readonly checked: LockedFile['checked'];
}

const TreeSchema = z.array(
  z.object({
    type: z.string(),
    path: z.string(),
    size: z.number().int().nonnegative().optional(),
    lfs: z
      .object({ oid: z.string().regex(/^[0-9a-f]{64}$/), size: z.number().int().nonnegative().optional() })
      .optional(),
  }),
);

/** Shards of one subset/split: the manifest's when it lists them, else the Hub tree at the pinned revision. */
async function listShards(
  manifest: DeepCoderManifest,
  base: string,
  subset: string,
  split: string,
  signal?: AbortSignal,
): Promise<Shard[]> {
  const isShard = (path: string): boolean => path.startsWith(`${subset}/${split}-`) && path.endsWith('.parquet');
  const known = manifest.files.filter((f) => isShard(f.path));
  if (known.length > 0)
    return known
      .map((f) => ({ path: f.path, sha256: f.sha256, checked: 'manifest' as const }))
      .sort((a, b) => a.path.localeCompare(b.path));
  const url = `${base}/api/datasets/${manifest.dataset}/tree/${manifest.revision}/${subset}`;
  const tree = TreeSchema.safeParse(await fetchJson(url, signal));
  if (!tree.success) throw new InputError(`unexpected file listing from ${url}`);
  const shards = tree.data
    .filter((e) => e.type === 'file' && isShard(e.path))
    .map((e): Shard => {
      const bytes = e.lfs?.size ?? e.size;
      return {
        path: e.path,
        ...(bytes === undefined ? {} : { bytes }),
        ...(e.lfs ? { sha256: e.lfs.oid, checked: 'hub' as const } : { checked: 'recorded' as const }),
      };
    })
    .sort((a, b) => a.path.localeCompare(b.path));
  if (shards.length === 0) throw new InputError(`no parquet files for ${subset}/${split} at ${url}`);
  return shards;
}

async function ensureShard(
  shard: Shard,
  local: string,
  url: string,
  previous: Map<string, string>,
  say: (line: string) => void,
  signal?: AbortSignal,
): Promise<LockedFile> {
  const expected = shard.sha256 ?? previous.get(shard.path);
  if (existsSync(local)) {
    const sha256 = await fileSha256(local);
    if (expected === undefined || sha256 === expected) {
      say(`${shard.path}: present (sha256 ${sha256.slice(0, 12)})`);
      return { path: shard.path, sha256, bytes: (await stat(local)).size, checked: shard.checked };
    }
  }
  const done = await downloadResumable({
    url,
    dest: local,
    sha256: shard.sha256,
    ...(shard.bytes === undefined ? {} : { bytes: shard.bytes }),
    ...(signal ? { signal } : {}),
    onProgress: progressLines(shard.path, shard.bytes, say),
  });
  say(
    `${shard.path}: ${done.how === 'resumed' ? 'resumed, ' : ''}sha256 ${done.sha256.slice(0, 12)} ${shard.checked === 'recorded' ? 'recorded (the source publishes none)' : `ok (${shard.checked})`}`,
  );
  return { path: shard.path, sha256: done.sha256, bytes: done.bytes, checked: shard.checked };
}

async function readRows(file: string, limit: number | undefined): Promise<Array<Record<string, unknown>>> {
  try {
    const buffer = await asyncBufferFromFile(file);
    return (await parquetReadObjects({ file: buffer, ...(limit === undefined ? {} : { rowEnd: limit }) })) as Array<
      Record<string, unknown>
    >;
  } catch (error) {
    throw new InputError(`cannot read parquet ${file}: ${(error as Error).message}`, { cause: error });
  }
}

function readLock(path: string): Map<string, string> {
  try {
    const lock = JSON.parse(readFileSync(path, 'utf8')) as { files?: Array<{ path: string; sha256: string }> };
    return new Map((lock.files ?? []).map((f) => [f.path, f.sha256]));
  } catch {
    return new Map();
  }
}
