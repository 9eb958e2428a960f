import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readFileSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { z } from 'zod';
import { InputError } from '../errors/index.js';
import { dataDir, projectRoot } from '../util/paths.js';
import { recordFromDeepCoderRow, type CodeProblemRecord } from './code-records.js';
import { downloadFile, fetchJson } from './download.js';

const ManifestSchema = z.object({
  dataset: z.string(),
  revision: z.string(),
  subsets: z.record(z.string(), z.array(z.string())),
  files: z.array(z.object({ path: z.string(), sha256: z.string().regex(/^[0-9a-f]{64}$/) })).default([]),
});
/** `datasets/deepcoder/manifest.json`: dataset id, pinned revision, subsets/splits and known checksums. */
export type DeepCoderManifest = z.infer<typeof ManifestSchema>;

export interface DeepCoderFetchOptions {
  /** Directory receiving `<subset>_<split>.jsonl`, `raw/<subset>/*.parquet` and `deepcoder.lock.json`; default `<data>/deepcoder/fetched`. */
  readonly dest?: string;
  /** Subsets to fetch (primeintellect, taco, lcbv5, codeforces); default all. */
  readonly subsets?: readonly string[];
  /** Most rows per subset and split; shards past it are not downloaded. */
  readonly limit?: number;
  /** Hub endpoint; default $HF_ENDPOINT, else https://huggingface.co. */
  readonly baseUrl?: string;
  readonly manifest?: DeepCoderManifest;
  readonly signal?: AbortSignal;
  /** One line per step (listing, downloading, converting), for the CLI to print. */
  readonly onProgress?: (line: string) => void;
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

/**
 * The fetcher `atk data fetch deepcoder [--subset ...] [--limit N]` runs (shaped like
 * `DatasetFetcher` in fetchers.ts; `subsets` is the extra option `--subset` fills).
 */
export const deepcoderFetcher = {
  name: 'deepcoder',
  description: 'DeepCoder-Preview-Dataset (primeintellect, taco, lcbv5, codeforces) as normalised jsonl; several GB in full',
  defaultDest: (): string => join(dataDir(), 'deepcoder', 'fetched'),
  fetch: fetchDeepCoder,
} as const;

/**
 * Downloads the DeepCoder parquet shards at the manifest's pinned revision (streamed to disk,
 * sha256-checked), converts rows to normalised jsonl the `deepcoder` dataset reads, and writes a
 * lock file with every checksum. Already present shards whose checksum still matches are reused.
 * @throws InputError on an unknown subset, a checksum mismatch or unreadable parquet; ProviderError on HTTP failures.
 */
export async function fetchDeepCoder(options: DeepCoderFetchOptions = {}): Promise<DeepCoderFetchSummary> {
  const manifest = options.manifest ?? loadManifest();
  const dest = options.dest ?? join(dataDir(), 'deepcoder', 'fetched');
  const base = (options.baseUrl ?? process.env.HF_ENDPOINT ?? 'https://huggingface.co').replace(/\/+$/, '');
  const subsets = options.subsets ?? Object.keys(manifest.subsets);
  for (const subset of subsets) {
    if (!manifest.subsets[subset]) throw new InputError(`unknown DeepCoder subset '${subset}'`, { hint: `choose from ${Object.keys(manifest.subsets).join(', ')}` });
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
        const locked = await ensureShard(shard, local, `${base}/datasets/${manifest.dataset}/resolve/${manifest.revision}/${shard.path}`, previous, say, options.signal);
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
      await writeAtomic(out, records.map((r) => JSON.stringify(r)).join('\n') + (records.length ? '\n' : ''));
      say(`${subset}/${split}: ${records.length} problems -> ${out}${skipped ? ` (${skipped} malformed rows skipped)` : ''}`);
      outputs.push({ subset, split, path: out, rows: records.length, skipped });
    }
  }
  await writeAtomic(lockPath, `${JSON.stringify({ dataset: manifest.dataset, revision: manifest.revision, base_url: base, files }, null, 2)}\n`);
  return { dest, outputs, files };
}

/** The shipped manifest. @throws InputError when it is missing or malformed. */
export function loadManifest(path = join(projectRoot(), 'datasets', 'deepcoder', 'manifest.json')): DeepCoderManifest {
  const parsed = ManifestSchema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
  if (!parsed.success) throw new InputError(`${path}: invalid manifest: ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}

interface Shard {
  readonly path: string;
  readonly sha256?: string;
  readonly checked: LockedFile['checked'];
}

const TreeSchema = z.array(z.object({ type: z.string(), path: z.string(), lfs: z.object({ oid: z.string() }).optional() }));

/** Shards of one subset/split: the manifest's when it lists them, else the Hub tree at the pinned revision. */
async function listShards(manifest: DeepCoderManifest, base: string, subset: string, split: string, signal?: AbortSignal): Promise<Shard[]> {
  const isShard = (path: string): boolean => path.startsWith(`${subset}/${split}-`) && path.endsWith('.parquet');
  const known = manifest.files.filter((f) => isShard(f.path));
  if (known.length > 0) return known.map((f) => ({ path: f.path, sha256: f.sha256, checked: 'manifest' as const })).sort((a, b) => a.path.localeCompare(b.path));
  const url = `${base}/api/datasets/${manifest.dataset}/tree/${manifest.revision}/${subset}`;
  const tree = TreeSchema.safeParse(await fetchJson(url, signal));
  if (!tree.success) throw new InputError(`unexpected file listing from ${url}`);
  const shards = tree.data
    .filter((e) => e.type === 'file' && isShard(e.path))
    .map((e): Shard => (e.lfs ? { path: e.path, sha256: e.lfs.oid, checked: 'hub' } : { path: e.path, checked: 'recorded' }))
    .sort((a, b) => a.path.localeCompare(b.path));
  if (shards.length === 0) throw new InputError(`no parquet files for ${subset}/${split} at ${url}`);
  return shards;
}

async function ensureShard(shard: Shard, local: string, url: string, previous: Map<string, string>, say: (line: string) => void, signal?: AbortSignal): Promise<LockedFile> {
  const expected = shard.sha256 ?? previous.get(shard.path);
  if (existsSync(local)) {
    const { sha256, bytes } = await hashFile(local);
    if (expected === undefined || sha256 === expected) {
      say(`${shard.path}: present (sha256 ${sha256.slice(0, 12)})`);
      return { path: shard.path, sha256, bytes, checked: shard.checked };
    }
  }
  say(`${shard.path}: downloading`);
  const done = await downloadFile(url, local, { sha256: shard.sha256, signal });
  return { path: shard.path, sha256: done.sha256, bytes: done.bytes, checked: shard.checked };
}

async function readRows(file: string, limit: number | undefined): Promise<Array<Record<string, unknown>>> {
  try {
    const buffer = await asyncBufferFromFile(file);
    return (await parquetReadObjects({ file: buffer, ...(limit === undefined ? {} : { rowEnd: limit }) })) as Array<Record<string, unknown>>;
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

async function hashFile(path: string): Promise<{ sha256: string; bytes: number }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of createReadStream(path)) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { sha256: hash.digest('hex'), bytes };
}

async function writeAtomic(path: string, text: string): Promise<void> {
  await writeFile(`${path}.tmp`, text);
  await rename(`${path}.tmp`, path);
}
