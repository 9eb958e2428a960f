import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { loadRecipe } from '../recipe/index.js';
import { projectRoot } from '../util/paths.js';
import { fitsGpus, modelParams, recipeGpuNeeds } from './gpu-fit.js';

const GIB = 1024 ** 3;
const recipe = async (file: string, overrides: string[] = []) =>
  (await loadRecipe(join(projectRoot(), 'recipes', file), overrides)).recipe;
const oneAndAHalfB = (): number => 1.5e9;

describe('recipeGpuNeeds', () => {
  test('returns the LoRA base in bf16 on the one GPU, full training at 16 bytes a parameter plus the serving copy', async () => {
    expect(recipeGpuNeeds(await recipe('gsm8k-one-gpu.yaml'), oneAndAHalfB)).toStrictEqual({
      kind: 'gpus',
      needs: [{ gpu: 0, minGiB: 3e9 / GIB / 0.8, parts: ['trainer: LoRA base 2.8 GiB'] }],
    });
    const lora = await recipe('gsm8k-one-gpu.yaml');
    const full = recipeGpuNeeds({ ...lora, algorithm: { ...lora.algorithm, lora: undefined } }, oneAndAHalfB);
    expect(full).toStrictEqual({
      kind: 'gpus',
      needs: [
        {
          gpu: 0,
          minGiB: (18 * 1.5e9) / GIB / 0.8,
          parts: ['trainer: weights, gradients, optimizer 22.4 GiB, embedded engine 2.8 GiB'],
        },
      ],
    });
  });

  test("returns vLLM's share of its GPU and the trainer's of what is left, with tensor parallelism splitting the weights", async () => {
    const shared = recipeGpuNeeds(
      await recipe('gsm8k-grpo.yaml', ['model.trainer.gpus=[0]', 'model.engine.gpu_memory_utilization=0.5']),
      oneAndAHalfB,
    );
    expect(shared).toStrictEqual({
      kind: 'gpus',
      needs: [
        {
          gpu: 0,
          minGiB: 3e9 / GIB / (0.8 * 0.5),
          parts: ['policy vllm: 50% of it, weights 2.8 GiB', 'trainer: LoRA base 2.8 GiB'],
        },
      ],
    });
    const airline = recipeGpuNeeds(await recipe('tau2-airline-grpo.yaml'), (model) =>
      model.includes('30B') ? 30e9 : 4e9,
    );
    expect(airline.kind === 'gpus' && airline.needs.map((n) => [n.gpu, n.parts])).toStrictEqual([
      [0, ['policy vllm: 80% of it, weights 7.5 GiB']],
      [1, ['trainer: LoRA base 7.5 GiB']],
      [2, ['user vllm: 90% of it, weights 27.9 GiB']],
      [3, ['user vllm: 90% of it, weights 27.9 GiB']],
    ]);
  });

  test('returns cpu for a CPU recipe, cluster for a Slurm one, and unknown for a model of unknown size', async () => {
    expect(recipeGpuNeeds(await recipe('quickstart.yaml'))).toStrictEqual({ kind: 'cpu' });
    expect(recipeGpuNeeds(await recipe('gsm8k-grpo-slurm.yaml'))).toStrictEqual({ kind: 'cluster' });
    expect(recipeGpuNeeds(await recipe('gsm8k-one-gpu.yaml'), () => undefined)).toStrictEqual({
      kind: 'unknown',
      reason: 'the size of Qwen/Qwen2.5-1.5B-Instruct is unknown',
    });
  });
});

describe('fitsGpus', () => {
  const needs = [
    { gpu: 0, minGiB: 40.2, parts: ['policy vllm: 85% of it, weights 27.9 GiB'] },
    { gpu: 1, minGiB: 9.4, parts: ['trainer: LoRA base 7.5 GiB'] },
  ];

  test('returns fits when every GPU the recipe names has the memory, else the first one short or the count missing', () => {
    expect(fitsGpus(needs, [80, 80])).toStrictEqual({ fits: true, why: 'needs 2 GPUs of >= 41 GiB' });
    expect(fitsGpus(needs, [24, 80])).toStrictEqual({
      fits: false,
      why: 'GPU 0 has 24 GiB, needs >= 41 (policy vllm: 85% of it, weights 27.9 GiB)',
    });
    expect(fitsGpus(needs, [80])).toStrictEqual({ fits: false, why: 'needs 2 GPUs of >= 41 GiB, has 1' });
  });
});

describe('modelParams', () => {
  test("returns a local model's safetensors bytes over its dtype's width, else the size a hub id names", () => {
    const tiny = join(projectRoot(), 'models', 'tiny-arith');
    expect(modelParams(tiny)).toBe(statSync(join(tiny, 'model.safetensors')).size / 4); // float32
    expect(modelParams('Qwen/Qwen2.5-1.5B-Instruct-not-downloaded')).toBe(1.5e9);
    expect(modelParams('Qwen/Qwen3-30B-A3B-Instruct-2507-not-downloaded')).toBe(30e9);
    expect(modelParams('meta-llama/Llama-3.1-8B')).toBe(8e9);
    expect(modelParams('org/model-without-a-size')).toBeUndefined();
  });
});
