import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { GENERATED_DOMAINS } from '../domains/tau2/index.js';
import { InputError } from '../errors/index.js';
import { projectRoot } from '../util/paths.js';
import { fetchers, type DatasetFetcher, type FetchOptions } from './fetchers.js';
import { nonEmptyDir } from './pinned-files.js';

/** The components of a recipe that may read built-in data (the names recipes give them). */
export interface RecipeDataNeeds {
  readonly dataset?: { readonly name: string; readonly path?: string | undefined };
  readonly tools?: ReadonlyArray<DataReader>;
  readonly reward?: DataReader;
}

/** A tool or reward as a recipe names it: its options say which domain it reads. */
interface DataReader {
  readonly name?: string | undefined;
  readonly options?: Readonly<Record<string, unknown>> | undefined;
}

/** Built-in data a recipe reads that is not in the data directory, and the command that fetches it. */
export interface MissingData {
  readonly name: string;
  readonly location: string;
}

/**
 * Names of the fetchable datasets a recipe reads: its dataset (unless `dataset.path` points at
 * the user's own file), and tools and rewards named like a fetchable dataset (tau2's tools and
 * reward read its database and tasks), unless their options name a domain atk generates (helpdesk).
 */
export function recipeDataNames(recipe: RecipeDataNeeds): string[] {
  const names = new Set<string>();
  if (recipe.dataset && recipe.dataset.path === undefined) names.add(recipe.dataset.name);
  const reads = (c: DataReader | undefined): c is DataReader & { name: string } =>
    c?.name !== undefined && !GENERATED_DOMAINS.includes(c.options?.domain as never);
  for (const tool of recipe.tools ?? []) if (reads(tool)) names.add(tool.name);
  if (reads(recipe.reward)) names.add(recipe.reward.name);
  return [...names].filter((name) => fetchers.has(name)).sort();
}

/** Which of the recipe's fetchable datasets are absent from the data directory. */
export async function missingRecipeData(recipe: RecipeDataNeeds): Promise<MissingData[]> {
  const missing: MissingData[] = [];
  for (const name of recipeDataNames(recipe)) {
    const fetcher = await fetchers.get(name);
    if (!isFetched(fetcher)) missing.push({ name, location: fetcher.defaultDest?.() ?? name });
  }
  return missing;
}

/** Whether a fetcher's data is where its dataset reads it. */
export function isFetched(fetcher: DatasetFetcher): boolean {
  if (fetcher.present) return fetcher.present();
  const dest = fetcher.defaultDest?.();
  return dest !== undefined && nonEmptyDir(dest);
}

/**
 * Before a run starts: with `fetch`, downloads the recipe's missing built-in data; without it,
 * refuses with the exact command that would.
 * @throws InputError naming the missing data and `atk data fetch <names>`; whatever a fetcher throws.
 */
export async function ensureRecipeData(
  recipe: RecipeDataNeeds,
  options: { readonly fetch?: boolean; readonly print?: (line: string) => void } & Pick<
    FetchOptions,
    'signal' | 'baseUrl' | 'manifestPath'
  > = {},
): Promise<void> {
  const missing = await missingRecipeData(recipe);
  if (missing.length === 0) return;
  const command = `atk data fetch ${missing.map((m) => m.name).join(' ')}`;
  if (!options.fetch) {
    throw new InputError(
      `the recipe reads data that is not fetched yet: ${missing.map((m) => `${m.name} (${m.location})`).join(', ')}`,
      {
        hint: `run \`${command}\` first, or add --fetch to fetch it now (ATK_DATA_DIR sets where data lives)`,
      },
    );
  }
  const print = options.print ?? (() => undefined);
  print(`fetching what the recipe needs: ${command}`);
  const { signal, baseUrl, manifestPath } = options;
  for (const { name } of missing)
    await (await fetchers.get(name)).fetch({
      onProgress: print,
      ...(signal ? { signal } : {}),
      ...(baseUrl ? { baseUrl } : {}),
      ...(manifestPath ? { manifestPath } : {}),
    });
}

/**
 * The fetchable datasets the recipes shipped under `recipes/` read, for `atk data fetch` with no
 * name. Read from each YAML file's own keys (an `extends` parent is itself a shipped recipe).
 */
export function shippedRecipeDataNames(dir: string = join(projectRoot(), 'recipes')): string[] {
  const names = new Set<string>();
  for (const file of yamlFiles(dir)) {
    let doc: unknown;
    try {
      doc = parse(readFileSync(file, 'utf8'));
    } catch {
      continue;
    }
    if (typeof doc === 'object' && doc !== null)
      for (const name of recipeDataNames(doc as RecipeDataNeeds)) names.add(name);
  }
  return [...names].sort();
}

function yamlFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return yamlFiles(path);
    return /\.ya?ml$/.test(entry.name) ? [path] : [];
  });
}
