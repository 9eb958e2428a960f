import { existsSync } from 'node:fs';
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
 * Root of the shared datasets (gsm8k/, deepcoder/, tau2/): $ATK_DATA_DIR, else ../shared/datasets
 * beside the project. Data is read from there, never copied into the repo.
 */
export function dataDir(): string {
  return process.env.ATK_DATA_DIR ? resolve(process.env.ATK_DATA_DIR) : resolve(projectRoot(), '..', 'shared', 'datasets');
}
