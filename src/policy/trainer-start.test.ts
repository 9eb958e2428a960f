import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { resolvedYaml, resolveRecipe } from '../recipe/resolve.js';
import { RecipeSchema } from '../recipe/schema.js';
import { loadModelRequest, trainerLaunchOptions } from './trainer-start.js';

function recipe(trainer: Record<string, unknown>, engine: Record<string, unknown> = {}) {
  return resolveRecipe(
    RecipeSchema.parse({
      name: 'placement',
      model: { path: '/models/tiny', trainer, engine },
      reward: { name: 'math_answer' },
    }),
    '/recipes',
  );
}

describe('trainerLaunchOptions', () => {
  test('returns the recipe python for discovery, the run log, threads, the embedded batch size and prefix cache, startup and call limits and the trainer GPUs', () => {
    const options = trainerLaunchOptions(
      recipe(
        { python: '/srv/venv/bin/python', threads: 2, gpus: [3], startup_timeout_s: 30, call_timeout_s: 90 },
        { max_batch_size: 48, prefix_cache_tokens: 8192 },
      ),
      { logsDir: '/run/logs', runDir: '/run' },
    );
    expect(options).toStrictEqual({
      recipePython: '/srv/venv/bin/python',
      runDir: '/run',
      logFile: join('/run/logs', 'trainer.log'),
      threads: 2,
      maxBatch: 48,
      prefixCacheTokens: 8192,
      startupTimeoutMs: 30_000,
      callTimeoutMs: 90_000,
      gpus: [3],
    });
    // A launched engine batches by its own flags (engine.args: --max-num-seqs); the trainer then serves no rollouts.
    expect(
      trainerLaunchOptions(recipe({}, { kind: 'vllm', max_batch_size: 48 }), { logsDir: '/run/logs', runDir: '/run' })
        .maxBatch,
    ).toBeUndefined();
  });

  test('returns no python, no GPUs and an auto prefix cache (so written in resolved.yaml) when the recipe sets none', () => {
    const options = trainerLaunchOptions(recipe({}), { logsDir: '/run/logs', runDir: '/run' });
    expect([options.recipePython, options.gpus, options.threads]).toStrictEqual([undefined, [], 1]);
    expect(options.prefixCacheTokens).toBe('auto'); // the trainer sizes it from free memory
    expect(resolvedYaml(recipe({}))).toMatch(/\n {4}prefix_cache_tokens: auto\n/);
    expect(resolvedYaml(recipe({}, { prefix_cache_tokens: 0 }))).toMatch(/\n {4}prefix_cache_tokens: 0\n/);
  });
});

describe('loadModelRequest', () => {
  test('returns the backend, device and dtype the recipe forces', () => {
    for (const backend of ['builtin', 'transformers'] as const) {
      const request = loadModelRequest(
        recipe({ backend, device: 'cuda', dtype: 'bfloat16', gradient_checkpointing: true, cuda_graphs: false }),
        '/models/tiny',
      );
      expect([
        request.backend,
        request.device,
        request.dtype,
        request.train?.dtype,
        request.train?.gradient_checkpointing,
        request.train?.cuda_graphs,
      ]).toStrictEqual([backend, 'cuda', 'bfloat16', 'bfloat16', true, false]);
    }
  });
});
