import { existsSync } from 'node:fs';
import { datasets } from '../datasets/index.js';
import { fetchers } from '../datasets/fetchers.js';
import type { PinnedFilesStatus } from '../datasets/pinned-files.js';
import { isFetched, shippedRecipeDataNames } from '../datasets/recipe-data.js';
import { InputError } from '../errors/index.js';
import { defineCommand } from './define-command.js';
import { interruptibleDownload } from './download-interrupt.js';

/** Options of `atk data fetch`. */
export interface DataFetchOptions {
  readonly name: string;
  readonly out?: string;
  readonly limit?: number;
  readonly subsets?: readonly string[];
  readonly baseUrl?: string;
  readonly manifestPath?: string;
  readonly signal?: AbortSignal;
  /** Where progress lines go (the terminal). */
  readonly print: (line: string) => void;
}

/**
 * `atk data fetch <name>`: run the named fetcher, printing its progress lines.
 * @throws InputError for an unknown name; whatever the fetcher throws (ProviderError, InputError, CancelledError).
 */
export async function runDataFetch(options: DataFetchOptions): Promise<string> {
  if (!fetchers.has(options.name))
    throw new InputError(fetchers.unknownMessage(options.name), { hint: 'atk data ls lists what can be fetched' });
  const fetcher = await fetchers.get(options.name);
  if (options.subsets !== undefined && fetcher.subsets === undefined)
    throw new InputError(`${options.name} has no subsets; --subset would do nothing`);
  const { dest } = await fetcher.fetch({
    ...(options.out === undefined ? {} : { dest: options.out }),
    ...(options.limit === undefined ? {} : { limit: options.limit }),
    ...(options.subsets === undefined ? {} : { subsets: options.subsets }),
    ...(options.baseUrl === undefined ? {} : { baseUrl: options.baseUrl }),
    ...(options.manifestPath === undefined ? {} : { manifestPath: options.manifestPath }),
    ...(options.signal ? { signal: options.signal } : {}),
    onProgress: options.print,
  });
  options.print(`${options.name}: done -> ${dest}`);
  return dest;
}

/** One row of `atk data ls`. */
export interface DataListing {
  readonly name: string;
  readonly fetchable: boolean;
  /** Where the fetcher writes, and whether something is there. */
  readonly location?: string;
  readonly present?: boolean;
  /** The files' sha256 against the pinned manifest (or the fetch's lock), for fetchers that pin them. */
  readonly checksums?: PinnedFilesStatus;
  readonly description?: string;
}

/** `atk data ls`: every registered dataset and fetcher, with where fetched data lives, whether it is there and whether its checksums hold. */
export async function runDataLs(): Promise<DataListing[]> {
  const names = [...new Set([...datasets.names(), ...fetchers.names()])].sort();
  return Promise.all(
    names.map(async (name): Promise<DataListing> => {
      if (!fetchers.has(name)) return { name, fetchable: false };
      const fetcher = await fetchers.get(name);
      const location = fetcher.defaultDest?.();
      const present = isFetched(fetcher);
      return {
        name,
        fetchable: true,
        ...(location === undefined ? {} : { location, present }),
        ...(present && location !== undefined && fetcher.check && existsSync(location)
          ? { checksums: await fetcher.check(location) }
          : {}),
        ...(fetcher.description === undefined ? {} : { description: fetcher.description }),
      };
    }),
  );
}

function formatListing(rows: readonly DataListing[]): string[] {
  const width = Math.max(...rows.map((r) => r.name.length), 4);
  return rows.map((r) => {
    const sums = r.checksums
      ? ` (${r.checksums.state === 'verified' ? 'sha256 verified' : `${r.checksums.state}: ${r.checksums.detail}`})`
      : '';
    const state = !r.fetchable
      ? 'nothing to fetch (generated, or read from the data dir)'
      : r.present
        ? `present: ${r.location}${sums}`
        : `not fetched: atk data fetch ${r.name}`;
    return `${r.name.padEnd(width)}  ${state}${r.description ? `\n${' '.repeat(width + 2)}${r.description}` : ''}`;
  });
}

const fetchCommand = defineCommand({
  command: 'fetch [names..]',
  describe:
    'Download datasets from their canonical source at a pinned revision (verified, resumable); no name: all the shipped recipes read',
  positionals: {
    names: {
      type: 'string',
      array: true,
      default: [],
      describe: 'Datasets to fetch (see atk data ls); none: every one a shipped recipe reads',
    },
  },
  options: {
    manifest: {
      type: 'string',
      describe: 'A manifest of your own (pinned files and sha256s) instead of the shipped one',
    },
    out: { type: 'string', describe: 'Directory to write into (default: where the dataset reads from)' },
    limit: { type: 'number', describe: 'Keep at most N rows per split' },
    subset: {
      type: 'string',
      array: true,
      describe: 'Only these parts of the dataset (deepcoder: primeintellect, taco, lcbv5, codeforces)',
    },
    'base-url': { type: 'string', describe: 'Mirror serving the same files instead of the canonical host' },
  },
  examples: [
    ['$0 data fetch', 'every dataset the shipped recipes read (gsm8k, tau2, deepcoder), into the data directory'],
    ['$0 data fetch tau2', 'tau2-bench airline and retail at the pinned commit'],
    ['$0 data fetch gsm8k', 'GSM8K train and test at the pinned revision, where the gsm8k dataset reads it'],
    [
      '$0 data fetch deepcoder --subset lcbv5 --limit 200',
      '200 LiveCodeBench problems per split, resumable if cut off',
    ],
  ],
  handler: async (args) => {
    if (args.limit !== undefined && !(Number.isInteger(args.limit) && args.limit > 0))
      throw new InputError(`--limit must be a positive whole number, got ${args.limit}`);
    const names = args.names.length > 0 ? args.names : shippedRecipeDataNames();
    if (names.length > 1 && (args.out !== undefined || args.manifest !== undefined || args['base-url'] !== undefined)) {
      throw new InputError('--out, --manifest and --base-url apply to one dataset; name it', {
        hint: `atk data fetch ${names[0]} ${args.out === undefined ? '' : '--out DIR'}`.trim(),
      });
    }
    const print = (line: string): void => void process.stdout.write(`${line}\n`);
    if (args.names.length === 0) print(`fetching every dataset the shipped recipes read: ${names.join(', ')}`);
    await interruptibleDownload(async (signal) => {
      for (const name of names) {
        await runDataFetch({
          name,
          ...(args.out === undefined ? {} : { out: args.out }),
          ...(args.limit === undefined ? {} : { limit: args.limit }),
          ...(args.subset === undefined
            ? {}
            : { subsets: args.subset.flatMap((s) => s.split(',')).filter((s) => s !== '') }),
          ...(args['base-url'] === undefined ? {} : { baseUrl: args['base-url'] }),
          ...(args.manifest === undefined ? {} : { manifestPath: args.manifest }),
          signal,
          print,
        });
      }
    });
  },
});

const lsCommand = defineCommand({
  command: 'ls',
  describe: 'List datasets and whether their data has been fetched',
  examples: [['$0 data ls', 'every dataset, whether it can be fetched and where its data is']],
  handler: async () => {
    for (const line of formatListing(await runDataLs())) process.stdout.write(`${line}\n`);
  },
});

/** `atk data <fetch|ls>`. */
export const dataCommand = defineCommand({
  command: 'data <command>',
  describe: 'Fetch and list datasets',
  commands: [fetchCommand, lsCommand],
  demandCommand: 'Name a data command: fetch or ls.',
  examples: [
    ['$0 data ls', 'what can be fetched and what is present'],
    ['$0 data fetch gsm8k', 'download GSM8K'],
  ],
  handler: () => undefined,
});
