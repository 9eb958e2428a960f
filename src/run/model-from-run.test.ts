import { cpSync, existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { tempDirs } from '../__fixtures__/temp-dirs.js';
import { writeTinyAdapter } from '../__fixtures__/tiny-qwen2.js';
import { InputError } from '../errors/index.js';
import { loadRecipe } from '../recipe/index.js';
import { createRunDir } from '../runs/index.js';
import { builtinChatTemplate } from '../tokens/index.js';
import { projectRoot } from '../util/paths.js';
import { modelFromRun } from './model-from-run.js';

const tempDir = tempDirs('atk-model-from-run-');
const QUICKSTART = join(projectRoot(), 'recipes', 'quickstart.yaml');
const BASE = join(projectRoot(), 'models', 'tiny-arith');
const TEMPLATE = builtinChatTemplate('chatml-tools')!;

/** A finished run in `runsDir` whose newest checkpoint (step 4) is the tiny model's full weights, or a LoRA adapter. */
async function sourceRun(runsDir: string, lora: boolean): Promise<string> {
  const run = await createRunDir({
    runsDir,
    name: 'warmstart',
    recipeText: 'name: warmstart\n',
    resolvedYaml: `model:\n  path: ${BASE}\n  chat_template: ${TEMPLATE}\n`,
    seed: 0,
  });
  if (lora) await writeTinyAdapter(BASE, run.checkpointDir(4), ['q_proj']);
  else
    for (const file of ['config.json', 'model.safetensors'])
      cpSync(join(BASE, file), join(run.checkpointDir(4), file), { recursive: true });
  await run.commitCheckpoint(4, 2);
  return run.dir;
}

const recipeWith = async (runsDir: string, path: string, more: string[] = []) =>
  (await loadRecipe(QUICKSTART, [`model.path=${path}`, `output.runs_dir=${runsDir}`, ...more])).recipe;

describe('modelFromRun', () => {
  test("returns a run's newest full-weight checkpoint with the run's tokenizer and chat template", async () => {
    const runsDir = tempDir();
    const dir = await sourceRun(runsDir, false);
    for (const path of [`${runsDir}/warmstart/latest`, dir, join(dir, 'checkpoints', 'step-00004')]) {
      const { recipe, from } = await modelFromRun(await recipeWith(runsDir, path));
      expect(from).toStrictEqual({ run: dir, step: 4, dir: join(dir, 'checkpoints', 'step-00004'), merged: false });
      expect([recipe.model.path, recipe.model.tokenizer, recipe.model.chat_template]).toStrictEqual([
        join(dir, 'checkpoints', 'step-00004'),
        BASE,
        TEMPLATE,
      ]);
    }
  });

  test("returns a LoRA checkpoint merged into its base once, and the recipe's own template where it sets one", async () => {
    const runsDir = tempDir();
    const dir = await sourceRun(runsDir, true);
    const own = join(BASE, 'chat_template.jinja');
    const first = await modelFromRun(await recipeWith(runsDir, dir, [`model.chat_template=${own}`]));
    const merged = join(dir, 'merged', 'step-00004');
    expect(first.from).toStrictEqual({ run: dir, step: 4, dir: merged, merged: true });
    expect(first.recipe.model.chat_template).toBe(own);
    expect(readdirSync(merged).sort()).toStrictEqual(['config.json', 'model.safetensors']);
    const made = statSync(join(merged, 'model.safetensors')).mtimeMs;
    const second = await modelFromRun(await recipeWith(runsDir, dir));
    expect(second.recipe.model.path).toBe(merged);
    expect(statSync(join(merged, 'model.safetensors')).mtimeMs).toBe(made);
    expect(readdirSync(join(dir, 'merged'))).toStrictEqual(['step-00004']); // no partial left behind
  });

  test('returns a model directory or a hub id unchanged', async () => {
    const runsDir = tempDir();
    for (const path of [BASE, 'Qwen/Qwen3-0.6B']) {
      const recipe = await recipeWith(runsDir, path);
      expect(await modelFromRun(recipe)).toStrictEqual({ recipe });
    }
  });

  test('rejects a run reference that names no run, and a run without a complete checkpoint', async () => {
    const runsDir = tempDir();
    await expect(modelFromRun(await recipeWith(runsDir, 'runs/warmstart/latest'))).rejects.toThrow(
      /^model\.path runs\/warmstart\/latest: no run 'runs\/warmstart\/latest' in /,
    );
    const run = await createRunDir({ runsDir, name: 'cut', recipeText: '', resolvedYaml: '', seed: 0 });
    const error = await modelFromRun(await recipeWith(runsDir, run.dir)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).message).toBe(
      `model.path ${run.dir}: run ${run.dir} has no complete checkpoint to start from`,
    );
    expect(existsSync(join(run.dir, 'merged'))).toBe(false);
  });
});
