import { Registry } from '../util/registry.js';
import type { PinnedFilesStatus } from './pinned-files.js';

/** What `atk data fetch <name>` passes a fetcher. */
export interface FetchOptions {
  /** Directory to write into (`--out`); default: the fetcher's place under the data dir, where its dataset looks. */
  readonly dest?: string;
  /** Most rows per split (`--limit`), for a quick look. */
  readonly limit?: number;
  /** Parts of a dataset with several (`--subset`, e.g. DeepCoder's lcbv5); default all. */
  readonly subsets?: readonly string[];
  /** Mirror or test server replacing the canonical host (`--base-url`). */
  readonly baseUrl?: string;
  /** A manifest of one's own (`--manifest`: other pinned files and checksums) instead of the shipped one. */
  readonly manifestPath?: string;
  readonly signal?: AbortSignal;
  /** One human-readable line per step or progress mark, for the CLI to print. */
  readonly onProgress?: (line: string) => void;
}

/** A downloader of one dataset's files from its canonical source at a pinned revision. */
export interface DatasetFetcher {
  readonly name: string;
  /** One line for `atk data ls`. */
  readonly description?: string;
  /** The parts `--subset` may name; a fetcher without them refuses `--subset`. */
  readonly subsets?: readonly string[];
  /** Where `fetch` writes without `dest` (shown by `atk data ls`). */
  defaultDest?(): string;
  /** Whether the dataset finds data to read (default: `defaultDest` holds files). */
  present?(): boolean;
  /** Checksum status of what is under `dest` (for `atk data ls`) against the shipped manifest or `manifestPath`. */
  check?(dest: string, manifestPath?: string): Promise<PinnedFilesStatus>;
  /** @throws ProviderError on network/HTTP failures; InputError on a checksum mismatch or bad options. */
  fetch(options: FetchOptions): Promise<{ readonly dest: string }>;
}

/** Every dataset `atk data fetch` can download: one lazy registration line each, in src/builtins.ts. */
export const fetchers = new Registry<DatasetFetcher>('dataset fetcher');
