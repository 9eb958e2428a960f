import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { loadManifest } from '../datasets/fetch-deepcoder.js';
import { dataDir } from '../util/paths.js';
import { startFileServer, type FileServer } from './file-server.js';

/** A problem as the shared rLLM copies hold it (`deepcoder/raw/*.json`). */
interface RawProblem {
  readonly problem: string;
  readonly starter_code?: string;
  readonly tests: unknown;
}

/** A loopback stand-in for huggingface.co serving DeepCoder test shards built from the shared data. */
export interface DeepCoderHub {
  readonly server: FileServer;
  /** The dataset id and pinned revision of the shipped manifest, which the URLs use. */
  readonly dataset: string;
  readonly revision: string;
  /** Shard path in the dataset (`lcbv5/test-00000-of-00002.parquet`) -> its bytes. */
  readonly shards: Readonly<Record<string, Buffer>>;
  /** URL path that serves a shard. */
  resolvePath(shard: string): string;
  readonly sha256: (bytes: Buffer) => string;
}

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/**
 * Serves `codeforces/test` (408 problems, one shard) and `lcbv5/test` (279 problems, two shards of
 * 140 and 139; fewer from the test/data slices) in the Hub's layout for DeepCoder-Preview-Dataset at the shipped manifest's
 * revision: parquet with the upstream columns (`problem`, `tests` as JSON text, `starter_code`,
 * `metadata`), built from the shared verbatim rLLM files — the same problems DeepCoder's test
 * parquet holds, with public tests only — plus the `/api/datasets/.../tree/...` listings with
 * each shard's LFS sha256 and size.
 */
export async function startDeepCoderHub(): Promise<DeepCoderHub> {
  const { dataset, revision } = loadManifest();
  const raw = (name: string): RawProblem[] =>
    JSON.parse(readFileSync(join(dataDir(), 'deepcoder', 'raw', name), 'utf8')) as RawProblem[];
  const codeforces = raw('rllm_test_code_codeforces.json');
  const lcb = raw('rllm_test_code_livecodebench_v5_2408-2502_public.json');
  const shards: Record<string, Buffer> = {
    'codeforces/test-00000-of-00001.parquet': parquet(codeforces),
    'lcbv5/test-00000-of-00002.parquet': parquet(lcb.slice(0, Math.ceil(lcb.length / 2))),
    'lcbv5/test-00001-of-00002.parquet': parquet(lcb.slice(Math.ceil(lcb.length / 2))),
  };
  const resolvePath = (shard: string): string => `/datasets/${dataset}/resolve/${revision}/${shard}`;
  const files: Record<string, Buffer> = {};
  for (const subset of ['codeforces', 'lcbv5']) {
    const entries = Object.entries(shards).filter(([path]) => path.startsWith(`${subset}/`));
    const listing = [
      { type: 'directory', path: `${subset}/extra` },
      ...entries.map(([path, bytes]) => ({
        type: 'file',
        path,
        size: bytes.length,
        lfs: { oid: sha256(bytes), size: bytes.length },
      })),
    ];
    files[`/api/datasets/${dataset}/tree/${revision}/${subset}`] = Buffer.from(JSON.stringify(listing));
    for (const [path, bytes] of entries) files[resolvePath(path)] = bytes;
  }
  return { server: await startFileServer(files), dataset, revision, shards, resolvePath, sha256 };
}

function parquet(problems: readonly RawProblem[]): Buffer {
  return Buffer.from(
    parquetWriteBuffer({
      columnData: [
        { name: 'problem', data: problems.map((p) => p.problem), type: 'STRING' },
        { name: 'tests', data: problems.map((p) => JSON.stringify(p.tests)), type: 'STRING' },
        { name: 'starter_code', data: problems.map((p) => p.starter_code ?? ''), type: 'STRING' },
        { name: 'metadata', data: problems.map(() => '{}'), type: 'STRING' },
      ],
      rowGroupSize: 50,
    }),
  );
}
