import { join } from 'node:path';
import { z } from 'zod';
import { InputError } from '../errors/index.js';
import { dataDir, projectRoot } from '../util/paths.js';
import type { DatasetFetcher, FetchOptions } from './fetchers.js';
import { checkPinnedFiles, downloadPinnedFile, pinnedManifestSchema, readManifest } from './pinned-files.js';
import type { DownloadOutcome } from './resumable-download.js';

const ManifestSchema = pinnedManifestSchema('tau2', {
  /** Its path in the repository; `name` is where it lands, the layout the `tau2` dataset reads. */
  path: z.string().min(1),
  /** The commit it is taken at, when not `revision` (the original release's tasks). */
  commit: z
    .string()
    .regex(/^[0-9a-f]{40}$/)
    .optional(),
});
/** `datasets/tau2/manifest.json`: the pinned commits of tau2-bench and each file's size and sha256. */
export type Tau2Manifest = z.infer<typeof ManifestSchema>;

export interface Tau2FetchSummary {
  readonly dest: string;
  readonly files: ReadonlyArray<{ readonly name: string; readonly path: string; readonly how: DownloadOutcome['how'] }>;
}

/** The fetcher `atk data fetch tau2` runs. */
export const tau2Fetcher: DatasetFetcher = {
  name: 'tau2',
  description:
    'tau2-bench airline + retail (sierra-research/tau2-bench, MIT): tasks, splits, db, policy, user-simulator guidelines; 10.9 MB',
  defaultDest: () => join(dataDir(), 'tau2'),
  fetch: (options) => fetchTau2(options),
  check: (dest, manifestPath) => checkPinnedFiles(dest, loadTau2Manifest(manifestPath).files),
};

/**
 * Downloads every file of the manifest from `<base>/<commit>/<path>` (the canonical host is
 * raw.githubusercontent.com; `baseUrl` is a mirror with the same layout) into `dest` under the
 * names the `tau2` dataset reads, each resumable through its `.part` and renamed into place only
 * when its sha256 matches, so a file under `dest` is always whole and verified.
 * @throws ProviderError on network/HTTP failures (partial files are kept for the next run);
 * InputError on a checksum mismatch or for `--limit`/`--subset`; CancelledError when aborted.
 */
export async function fetchTau2(
  options: FetchOptions & { readonly manifest?: Tau2Manifest } = {},
): Promise<Tau2FetchSummary> {
  if (options.limit !== undefined)
    throw new InputError('tau2 has no --limit: its tasks refer to one whole database per domain');
  const manifest = options.manifest ?? loadTau2Manifest(options.manifestPath);
  const dest = options.dest ?? join(dataDir(), 'tau2');
  const base = (options.baseUrl ?? manifest.base_url).replace(/\/+$/, '');
  const say = options.onProgress ?? (() => undefined);
  const files: Array<Tau2FetchSummary['files'][number]> = [];
  for (const file of manifest.files) {
    const url = `${base}/${file.commit ?? manifest.revision}/${file.path}`;
    const { path, how } = await downloadPinnedFile(file, url, dest, say, options.signal);
    say(`${file.name}: ${how === 'cached' ? 'already present, ' : ''}sha256 ok -> ${path}`);
    files.push({ name: file.name, path, how });
  }
  return { dest, files };
}

/**
 * Reads and checks the shipped manifest.
 * @throws InputError when it is missing or malformed.
 */
export function loadTau2Manifest(path = join(projectRoot(), 'datasets', 'tau2', 'manifest.json')): Tau2Manifest {
  return readManifest(path, ManifestSchema, 'tau2');
}
