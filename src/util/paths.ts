import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The atk package root (holds package.json, models/, trainer/, recipes/), from src/ or dist/. */
export function projectRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('atk package root not found');
    dir = parent;
  }
  return dir;
}

/** PYTHONPATH that makes the bundled trainer package (atk_trainer) importable, ahead of `inherited`. */
export function trainerPythonPath(inherited: string | undefined = process.env.PYTHONPATH): string {
  return [join(projectRoot(), 'trainer'), inherited].filter(Boolean).join(delimiter);
}

/**
 * Root of the datasets (gsm8k/, deepcoder/, tau2/) the built-in loaders read and `atk data fetch`
 * writes: $ATK_DATA_DIR, else $XDG_DATA_HOME/atk/datasets, else ~/.local/share/atk/datasets. The
 * user's data directory, never a path beside the installed package, so every clone and every
 * global install finds the same fetched data.
 */
export function dataDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.ATK_DATA_DIR) return resolve(env.ATK_DATA_DIR);
  const xdg = env.XDG_DATA_HOME?.startsWith('/') ? env.XDG_DATA_HOME : join(homedir(), '.local', 'share');
  return join(xdg, 'atk', 'datasets');
}

/** The private Python venv `atk setup` makes where apt cannot: $XDG_CACHE_HOME/atk/venv, else ~/.cache/atk/venv. */
export function venvDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(atkCacheDir(env), 'venv');
}

/** atk's cache (venvs, downloads, imported models): $XDG_CACHE_HOME/atk, else ~/.cache/atk. */
export function atkCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CACHE_HOME?.startsWith('/') ? env.XDG_CACHE_HOME : join(homedir(), '.cache'), 'atk');
}
