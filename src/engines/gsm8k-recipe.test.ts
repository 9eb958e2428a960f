import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { parse } from 'yaml';
import { runValidate } from '../cli/validate.js';
import { checkEngineSettings } from '../policy/index.js';
import { engineCommand } from './launch/engine-command.js';
import { projectRoot } from '../util/paths.js';
import { loadRecipe } from '../recipe/load.js';
import { RecipeSchema } from '../recipe/schema.js';

const file = join(projectRoot(), 'recipes', 'gsm8k-grpo.yaml');

describe('recipes/gsm8k-grpo.yaml', () => {
  test('returns a recipe the schema, the loader and the engine checks accept', async () => {
    const recipe = RecipeSchema.parse(parse(readFileSync(file, 'utf8')));
    expect([
      recipe.model.engine.kind,
      recipe.model.path,
      recipe.dataset.name,
      recipe.reward.name,
      recipe.tools.map((t) => t.name),
    ]).toStrictEqual(['vllm', 'Qwen/Qwen2.5-1.5B-Instruct', 'gsm8k', 'math_answer', ['calculator']]);
    expect(checkEngineSettings(recipe)).toStrictEqual([]);
    const loaded = await loadRecipe(file);
    expect(loaded.recipe.algorithm.lora).toMatchObject({ rank: 32, alpha: 64 });
  });

  test('atk validate accepts two trainer GPUs on CUDA (torchrun + FSDP) and refuses them with device cpu', async () => {
    const validate = (...overrides: string[]) => runValidate({ recipe: file, overrides, resolved: false });
    expect(await validate('model.trainer.gpus=[1,2]', 'model.trainer.device=cuda')).toMatch(
      /: ok \(gsm8k-grpo: grpo, /,
    );
    const error = await validate('model.trainer.gpus=[1,2]', 'model.trainer.device=cpu').catch((e: unknown) => e);
    expect(String(error)).toMatch(
      /model\.trainer\.gpus.*several trainer GPUs shard the model with FSDP, which needs model\.trainer\.device cuda/,
    );
  });

  test('returns the vLLM command line a GPU machine would run', async () => {
    const { recipe } = await loadRecipe(file);
    const { engine } = recipe.model;
    const lora = recipe.algorithm.lora;
    const command = engineCommand({
      kind: 'vllm',
      model: recipe.model.path,
      servedModelName: 'policy',
      port: 8000,
      args: engine.args,
      gpus: engine.gpus,
      gpuMemoryUtilization: engine.gpu_memory_utilization,
      maxModelLen: engine.max_model_len,
      seed: recipe.seed,
      ...(lora ? { lora: { rank: lora.rank, targetModules: lora.target_modules } } : {}),
    });
    expect([command.file, ...command.args].join(' ')).toBe(
      'vllm serve Qwen/Qwen2.5-1.5B-Instruct --host 127.0.0.1 --port 8000 --served-model-name policy --max-model-len 4096 --gpu-memory-utilization 0.85 ' +
        '--generation-config vllm --logprobs-mode processed_logprobs --return-tokens-as-token-ids --seed 0 --enable-lora --max-lora-rank 32 --max-loras 1 --max-cpu-loras 2',
    );
    expect(command.env).toStrictEqual({
      VLLM_SERVER_DEV_MODE: '1',
      VLLM_ALLOW_RUNTIME_LORA_UPDATING: 'True',
      CUDA_VISIBLE_DEVICES: '0',
    });
  });
});
