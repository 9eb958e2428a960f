import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from 'vitest';
import { startFileServer, type FileServer } from '../__fixtures__/file-server.js';
import { tau2TestManifest } from '../__fixtures__/test-data.js';
import { main } from '../cli/main.js';
import { InputError } from '../errors/index.js';
import { dataDir, projectRoot } from '../util/paths.js';
import { ensureRecipeData, missingRecipeData, recipeDataNames, shippedRecipeDataNames } from './recipe-data.js';

const fullDataDir = dataDir();
const { manifest, path: manifestPath } = tau2TestManifest();
let server: FileServer;
beforeAll(async () => {
  server = await startFileServer(
    Object.fromEntries(
      manifest.files.map((f) => [
        `/${f.commit ?? manifest.revision}/${f.path}`,
        readFileSync(join(fullDataDir, 'tau2', f.name)),
      ]),
    ),
  );
});
afterAll(() => server.close());
afterEach(() => {
  process.env.ATK_DATA_DIR = fullDataDir;
});

/** Point the data dir at an empty folder, as on a machine that fetched nothing. */
function emptyDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'atk-nodata-'));
  process.env.ATK_DATA_DIR = dir;
  return dir;
}

const tau2Recipe = { dataset: { name: 'tau2' }, tools: [{ name: 'tau2' }], reward: { name: 'tau2' } };

describe('recipeDataNames', () => {
  test('returns the fetchable datasets a recipe reads, not a dataset.path file or generated data', () => {
    expect(recipeDataNames(tau2Recipe)).toStrictEqual(['tau2']);
    expect(
      recipeDataNames({
        dataset: { name: 'gsm8k', path: 'mine.jsonl' },
        tools: [{ name: 'calculator' }],
        reward: { name: 'math_answer' },
      }),
    ).toStrictEqual([]);
    expect(recipeDataNames({ dataset: { name: 'arith' } })).toStrictEqual([]);
  });
});

describe('shippedRecipeDataNames', () => {
  test('returns every dataset the shipped recipes read, for `atk data fetch` with no name', () => {
    expect(shippedRecipeDataNames()).toStrictEqual(['deepcoder', 'gsm8k', 'tau2']);
  });
});

describe('ensureRecipeData', () => {
  test('rejects a recipe whose data is missing with the exact fetch command', async () => {
    const dir = emptyDataDir();
    expect(await missingRecipeData(tau2Recipe)).toStrictEqual([{ name: 'tau2', location: join(dir, 'tau2') }]);
    const error = await ensureRecipeData(tau2Recipe).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect([(error as InputError).message, (error as InputError).hint]).toStrictEqual([
      `the recipe reads data that is not fetched yet: tau2 (${join(dir, 'tau2')})`,
      'run `atk data fetch tau2` first, or add --fetch to fetch it now (ATK_DATA_DIR sets where data lives)',
    ]);
  });

  test('returns after fetching the missing data with fetch, into the data dir', async () => {
    const dir = emptyDataDir();
    const lines: string[] = [];
    await ensureRecipeData(tau2Recipe, { fetch: true, baseUrl: server.url, manifestPath, print: (l) => lines.push(l) });
    expect(lines[0]).toBe('fetching what the recipe needs: atk data fetch tau2');
    expect(readdirSync(join(dir, 'tau2', 'domains')).sort()).toStrictEqual(['airline', 'retail']);
    expect(await missingRecipeData(tau2Recipe)).toStrictEqual([]);
  });
});

describe('atk run', () => {
  test('returns exit code 2 naming `atk data fetch tau2` before any run directory exists', async () => {
    emptyDataDir();
    const runs = mkdtempSync(join(tmpdir(), 'atk-runs-'));
    const stderr: string[] = [];
    const write = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => stderr.push(String(chunk)) > 0);
    try {
      await main(['run', join(projectRoot(), 'recipes', 'smoke', 'tau2.yaml'), `output.runs_dir=${runs}`, '--no-tui']);
      expect(process.exitCode).toBe(2);
    } finally {
      write.mockRestore();
      process.exitCode = 0;
    }
    expect(stderr.join('')).toContain('atk data fetch tau2');
    expect(existsSync(runs) && readdirSync(runs)).toStrictEqual([]);
  });
});
