import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { ConfigError } from '../errors/index.js';
import { loadRecipe, type ResolvedRecipe } from '../recipe/index.js';
import { projectRoot } from '../util/paths.js';
import { fullWeightSync, weightSyncProblems } from './index.js';

const slurmRecipe = join(projectRoot(), 'recipes', 'gsm8k-grpo-slurm.yaml');
type SyncRecipe = Parameters<typeof fullWeightSync>[0];

let shipped: ResolvedRecipe;
beforeAll(async () => {
  shipped = (await loadRecipe(slurmRecipe)).recipe;
});

/** The shipped slurm recipe with full weights (it trains a LoRA adapter) and these changes. */
function variant(
  engine: Partial<ResolvedRecipe['model']['engine']> = {},
  cluster: Partial<ResolvedRecipe['cluster']> = {},
  lora = false,
): SyncRecipe {
  return {
    algorithm: { ...shipped.algorithm, lora: lora ? shipped.algorithm.lora : undefined },
    cluster: { ...shipped.cluster, ...cluster },
    model: { ...shipped.model, engine: { ...shipped.model.engine, ...engine } as ResolvedRecipe['model']['engine'] },
  };
}

describe('fullWeightSync', () => {
  test('returns broadcast for full weights off one machine without a shared dir, disk with one or on one machine', () => {
    expect(fullWeightSync(variant())).toBe('broadcast');
    expect(fullWeightSync(variant({}, { shared_dir: '/nfs/atk' }))).toBe('disk');
    expect(fullWeightSync(variant({}, { launcher: 'local' }))).toBe('disk');
    expect(fullWeightSync(variant({ weight_sync: 'disk' }))).toBe('disk');
    expect(fullWeightSync(variant({ weight_sync: 'broadcast' }, { launcher: 'local' }))).toBe('broadcast');
  });

  test('returns undefined where no full weights go into vLLM (LoRA, SGLang)', () => {
    expect(fullWeightSync(variant({}, {}, true))).toBeUndefined();
    expect(fullWeightSync(variant({ kind: 'sglang' }))).toBeUndefined();
  });
});

describe('weightSyncProblems', () => {
  const path = 'model.engine.weight_sync';
  test('rejects a broadcast with LoRA, SGLang or the embedded engine, naming the key', () => {
    expect(weightSyncProblems(variant({ weight_sync: 'broadcast' }))).toStrictEqual([]);
    expect(weightSyncProblems(variant({ weight_sync: 'broadcast' }, {}, true))).toStrictEqual([
      { path, message: 'broadcast sends full weights; with algorithm.lora every sync loads the adapter files' },
    ]);
    expect(weightSyncProblems(variant({ weight_sync: 'broadcast', kind: 'sglang' }))).toStrictEqual([
      { path, message: "broadcast goes through atk's vLLM worker extension; sglang reloads from disk" },
    ]);
    expect(weightSyncProblems(variant({ weight_sync: 'broadcast', kind: 'embedded' }))).toStrictEqual([
      { path, message: 'broadcast: the embedded engine serves the trainer its own weights; nothing is sent' },
    ]);
  });

  test('rejects a weight_sync on the user simulator engine, which is never synced', () => {
    const user = { engine: { ...shipped.model.engine, weight_sync: 'disk' } } as ResolvedRecipe['user'];
    expect(weightSyncProblems({ ...variant(), user })).toStrictEqual([
      {
        path: 'user.engine.weight_sync',
        message: 'the user simulator is never trained: no weights are synced into it',
      },
    ]);
  });

  test('rejects the recipe at load time, as atk validate and atk run do', async () => {
    const error = await loadRecipe(slurmRecipe, [
      'model.engine.kind=sglang',
      'model.engine.weight_sync=broadcast',
    ]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain(
      "model.engine.weight_sync: broadcast goes through atk's vLLM worker extension; sglang reloads from disk",
    );
  });
});
