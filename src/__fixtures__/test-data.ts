import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadGsm8kManifest, type Gsm8kManifest } from '../datasets/fetch-gsm8k.js';
import { loadTau2Manifest, type Tau2Manifest } from '../datasets/fetch-tau2.js';
import { dataDir } from '../util/paths.js';

/**
 * Whether the tests read the full datasets ($ATK_DATA_DIR, the shared folder) or the slices of
 * test/data, which carry a SLICE.md. Tests that count rows or tasks state both figures.
 */
export const fullData: boolean = !existsSync(join(dataDir(), 'SLICE.md'));

/** `full` against the full datasets, `slice` against test/data's slices. */
export function fullOrSlice<T>(full: T, slice: T): T {
  return fullData ? full : slice;
}

/** A fetch manifest the test data matches, and the file it is written to (for `--manifest`). */
export interface TestManifest<M> {
  readonly manifest: M;
  readonly path: string;
}

/**
 * The shipped GSM8K manifest against the full data; against the slices, the same manifest with
 * each file's size, rows and sha256 those of the slice, so the fetcher's checks run for real.
 */
export function gsm8kTestManifest(): TestManifest<Gsm8kManifest> {
  const shipped = loadGsm8kManifest();
  const files = shipped.files.map((f) => {
    const bytes = readFileSync(join(dataDir(), 'gsm8k', f.name));
    return fullData
      ? f
      : {
          ...f,
          bytes: bytes.length,
          rows: bytes
            .toString('utf8')
            .split('\n')
            .filter((l) => l.trim() !== '').length,
          sha256: sha256(bytes),
        };
  });
  return written({ ...shipped, files });
}

/** As gsm8kTestManifest, for tau2. */
export function tau2TestManifest(): TestManifest<Tau2Manifest> {
  const shipped = loadTau2Manifest();
  const files = shipped.files.map((f) => {
    const bytes = readFileSync(join(dataDir(), 'tau2', f.name));
    return fullData ? f : { ...f, bytes: bytes.length, sha256: sha256(bytes) };
  });
  return written({ ...shipped, files });
}

function written<M>(manifest: M): TestManifest<M> {
  const path = join(mkdtempSync(join(tmpdir(), 'atk-manifest-')), 'manifest.json');
  writeFileSync(path, JSON.stringify(manifest));
  return { manifest, path };
}

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}
