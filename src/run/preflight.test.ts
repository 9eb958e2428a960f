import { describe, expect, test } from 'vitest';
import { ConfigError } from '../errors/index.js';
import { loadRecipe } from '../recipe/index.js';
import { preflightGpus } from './preflight.js';
import '../builtins.js';

// recipes/gsm8k-grpo.yaml places its vLLM engine on GPU 0 (line 13) and its trainer on GPU 1 (line 19).
const GSM8K = 'recipes/gsm8k-grpo.yaml';

async function refusal(overrides: readonly string[], gpus: number): Promise<unknown> {
  const loaded = await loadRecipe(GSM8K, overrides);
  return preflightGpus(loaded, async () => gpus).then(
    () => undefined,
    (e: unknown) => e,
  );
}

describe('preflightGpus', () => {
  test('returns for GPU indices the machine has', async () => {
    expect(await refusal([], 2)).toBeUndefined();
  });

  test('rejects each key naming a GPU past the last, at the line that named it', async () => {
    const error = await refusal(['model.trainer.gpus=[3]'], 2);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toBe(
      '<overrides>:1:20  model.trainer.gpus: GPU 3 not found: this machine has 2 GPUs (0-1)',
    );
    expect(
      ((await refusal([], 0)) as ConfigError).issues.map((i) => [i.file.slice(-15), i.line, i.path]),
    ).toStrictEqual([
      ['gsm8k-grpo.yaml', 19, 'model.trainer.gpus'],
      ['gsm8k-grpo.yaml', 13, 'model.engine.gpus'],
    ]);
  });

  test('rejects model.trainer.device cuda with no GPU, and checks nothing on a cluster launcher', async () => {
    const cuda = (await refusal(
      [
        'model.trainer.gpus=[]',
        'model.engine.gpus=[]',
        'model.engine.gpu_memory_utilization=0.5',
        'model.trainer.device=cuda',
      ],
      0,
    )) as ConfigError;
    expect(cuda.issues.map((i) => [i.path, i.message])).toStrictEqual([
      ['model.trainer.device', 'cuda needs a GPU: this machine has no GPU (nvidia-smi finds none); use auto or cpu'],
    ]);
    expect(await refusal(['cluster.launcher=hosts', 'cluster.hosts=[a, b]'], 0)).toBeUndefined();
  });
});
