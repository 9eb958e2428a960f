import { describe, expect, test } from 'vitest';
import { RecipeSchema, type RecipeInput } from '../recipe/schema.js';
import { checkEngineSettings } from './index.js';

const recipe = (
  model: Partial<RecipeInput['model']>,
  lora: boolean | number = true,
): ReturnType<typeof RecipeSchema.parse> =>
  RecipeSchema.parse({
    name: 't',
    model: { path: 'Qwen/Qwen2.5-1.5B-Instruct', ...model },
    reward: { name: 'math_answer' },
    algorithm: lora === false ? {} : { lora: typeof lora === 'number' ? { rank: lora } : {} },
  });

describe('checkEngineSettings', () => {
  test('returns no problems for a vLLM engine and a trainer on separate GPUs', () => {
    expect(
      checkEngineSettings(recipe({ engine: { kind: 'vllm', gpus: [0, 1], replicas: 2 }, trainer: { gpus: [2] } })),
    ).toStrictEqual([]);
  });

  test('returns no problems for one GPU shared at a low engine share, or the embedded default', () => {
    expect(
      checkEngineSettings(
        recipe({ engine: { kind: 'vllm', gpus: [0], gpu_memory_utilization: 0.5 }, trainer: { gpus: [0] } }),
      ),
    ).toStrictEqual([]);
    expect(checkEngineSettings(recipe({}, false))).toStrictEqual([]);
  });

  test('rejects launch settings on engines atk does not launch', () => {
    expect(
      checkEngineSettings(
        recipe({ engine: { kind: 'embedded', command: ['x'], args: ['--y'], replicas: 2, gpus: [0] } }),
      ),
    ).toStrictEqual([
      {
        path: 'model.engine.command',
        message: 'only vllm and sglang engines are launched by atk; the embedded engine runs inside the trainer',
      },
      {
        path: 'model.engine.args',
        message: 'only vllm and sglang engines are launched by atk; the embedded engine runs inside the trainer',
      },
      {
        path: 'model.engine.replicas',
        message: 'replicas are launched vllm/sglang servers; the embedded engine runs inside the trainer',
      },
      { path: 'model.engine.gpus', message: "the embedded engine uses the trainer's GPUs: set model.trainer.gpus" },
    ]);
  });

  test('rejects replicas without an equal GPU share each, a url on a launched engine, and a repeated GPU', () => {
    expect(
      checkEngineSettings(
        recipe({
          engine: { kind: 'sglang', url: 'http://127.0.0.1:1', gpus: [0, 0, 1], replicas: 2 },
          trainer: { gpus: [2] },
        }),
      ),
    ).toStrictEqual([
      {
        path: 'model.engine.url',
        message: 'a launched sglang engine gets its own loopback URL; use kind url to attach to a running server',
      },
      { path: 'model.engine.gpus', message: 'lists a GPU twice' },
      {
        path: 'model.engine.replicas',
        message:
          '2 replicas need model.engine.gpus to list a multiple of 2 GPUs (each replica gets an equal share); it lists 3',
      },
    ]);
  });

  test('rejects a shared GPU at a high engine share and an unservable LoRA rank', () => {
    expect(
      checkEngineSettings(
        recipe({ engine: { kind: 'vllm', gpus: [0], gpu_memory_utilization: 0.9 }, trainer: { gpus: [0, 1] } }, 1024),
      ),
    ).toStrictEqual([
      {
        path: 'model.engine.gpu_memory_utilization',
        message:
          'GPU 0 is shared with the trainer; at 0.9 the trainer is left too little (use <= 0.8, e.g. 0.5, or give each its own GPUs)',
      },
      { path: 'algorithm.lora.rank', message: 'vLLM serves LoRA ranks up to 512; got 1024' },
    ]);
  });

  test('returns no problems for two trainer GPUs on CUDA (torchrun + FSDP), with the embedded engine or beside vLLM', () => {
    expect(checkEngineSettings(recipe({ trainer: { device: 'cuda', gpus: [0, 1] } }, false))).toStrictEqual([]);
    expect(
      checkEngineSettings(
        recipe({ engine: { kind: 'vllm', gpus: [0] }, trainer: { device: 'cuda', dtype: 'bfloat16', gpus: [1, 2] } }),
      ),
    ).toStrictEqual([]);
  });

  test('rejects trainer GPUs that cannot work: several with device cpu, one listed twice', () => {
    expect(checkEngineSettings(recipe({ trainer: { device: 'cpu', gpus: [0, 1] } }, false))).toStrictEqual([
      {
        path: 'model.trainer.gpus',
        message:
          'several trainer GPUs shard the model with FSDP, which needs model.trainer.device cuda (or auto); with device cpu they do nothing',
      },
    ]);
    expect(checkEngineSettings(recipe({ trainer: { device: 'cuda', gpus: [1, 1] } }, false))).toStrictEqual([
      { path: 'model.trainer.gpus', message: 'lists a GPU twice' },
    ]);
  });

  test('rejects the default engine share when neither lists GPUs (both on GPU 0), and accepts a CPU trainer', () => {
    expect(checkEngineSettings(recipe({ engine: { kind: 'vllm' } }))).toStrictEqual([
      {
        path: 'model.engine.gpu_memory_utilization',
        message:
          'GPU 0 is shared with the trainer (model.engine.gpus and model.trainer.gpus are not set: GPU 0); at 0.85 the trainer is left too little (use <= 0.8, e.g. 0.5, or give each its own GPUs)',
      },
    ]);
    expect(checkEngineSettings(recipe({ engine: { kind: 'vllm' }, trainer: { device: 'cpu' } }))).toStrictEqual([]);
  });

  test('rejects random init with an engine that loads its own weights', () => {
    expect(
      checkEngineSettings(recipe({ init: 'random', engine: { kind: 'sglang', gpu_memory_utilization: 0.5 } })),
    ).toStrictEqual([
      {
        path: 'model.init',
        message:
          'a sglang engine loads the weights in model.path, so a randomly initialised trainer would train a different model; random init needs the embedded engine',
      },
    ]);
  });

  test('rejects a prefix-cache size on an engine other than the embedded one, which keeps its own', () => {
    const problems = (kind: 'embedded' | 'vllm' | 'sglang' | 'url', prefix_cache_tokens: number | 'auto') =>
      checkEngineSettings(
        recipe(
          { engine: { kind, prefix_cache_tokens, gpu_memory_utilization: 0.5, url: 'http://127.0.0.1:1' } },
          false,
        ),
      ).filter((p) => p.path === 'model.engine.prefix_cache_tokens');
    expect(problems('vllm', 0)).toStrictEqual([
      {
        path: 'model.engine.prefix_cache_tokens',
        message:
          "sizes the embedded engine's prefix cache; a vllm engine keeps its own within gpu_memory_utilization (model.engine.args: --no-enable-prefix-caching turns it off)",
      },
    ]);
    expect(problems('sglang', 4096)[0]?.message).toMatch(/--disable-radix-cache turns it off\)$/);
    expect(problems('url', 4096)[0]?.message).toMatch(/the server at model.engine.url keeps its own$/);
    for (const kind of ['vllm', 'sglang', 'url'] as const) expect(problems(kind, 'auto')).toStrictEqual([]);
    expect(problems('embedded', 0)).toStrictEqual([]);
  });

  test("returns no problem for full fine-tuning into vLLM (reloaded by atk's worker extension) or SGLang", () => {
    for (const kind of ['vllm', 'sglang'] as const)
      expect(checkEngineSettings(recipe({ engine: { kind, gpu_memory_utilization: 0.5 } }, false))).toStrictEqual([]);
  });
});
