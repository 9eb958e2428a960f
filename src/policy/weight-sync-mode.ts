/**
 * How full weights reach launched vLLM replicas: `disk` (the trainer writes an HF checkpoint, each
 * replica reloads it, uploaded first where no disk is shared) or `broadcast` (a torch.distributed group
 * from trainer rank 0 to every engine worker, weight-broadcast.ts). LoRA syncs always load adapter files.
 */
import type { RecipeProblem } from '../recipe/checks.js';
import type { ResolvedRecipe } from '../recipe/resolve.js';
import type { EngineKindDefinition, EngineProtocol } from './engine-kind.js';

export type FullWeightSync = 'disk' | 'broadcast';

export type WeightSyncRecipe = Pick<ResolvedRecipe, 'model' | 'cluster' | 'algorithm'> &
  Partial<Pick<ResolvedRecipe, 'user'>>;

/**
 * The full-weight sync a recipe gets: its `model.engine.weight_sync`, or for `auto` a broadcast off one
 * machine (a slurm or hosts launcher) without `cluster.shared_dir`, where the files would have to be
 * copied to every engine node, and disk otherwise. Undefined when the recipe syncs no full weights into
 * a vLLM engine (LoRA, the embedded engine, SGLang): `protocol` is the one the engine kind syncs over.
 */
export function fullWeightSyncOver(
  recipe: WeightSyncRecipe,
  protocol: EngineProtocol | undefined,
): FullWeightSync | undefined {
  const { engine } = recipe.model;
  if (recipe.algorithm.lora || protocol !== 'vllm') return undefined;
  if (engine.weight_sync !== 'auto') return engine.weight_sync;
  return recipe.cluster.launcher !== 'local' && recipe.cluster.shared_dir === undefined ? 'broadcast' : 'disk';
}

/** A `weight_sync: broadcast` the recipe cannot use with its engine `kind`, with why. */
export function weightSyncProblemsOf(recipe: WeightSyncRecipe, kind: EngineKindDefinition): RecipeProblem[] {
  const { engine } = recipe.model;
  if ((recipe.user?.engine?.weight_sync ?? 'auto') !== 'auto')
    return [
      {
        path: 'user.engine.weight_sync',
        message: 'the user simulator is never trained: no weights are synced into it',
      },
    ];
  if (engine.weight_sync !== 'broadcast') return [];
  const path = 'model.engine.weight_sync';
  const protocol = kind.syncProtocol(engine);
  if (protocol === undefined)
    return [
      { path, message: `broadcast: the ${kind.name} engine serves the trainer its own weights; nothing is sent` },
    ];
  if (protocol !== 'vllm')
    return [{ path, message: `broadcast goes through atk's vLLM worker extension; ${protocol} reloads from disk` }];
  if (recipe.algorithm.lora)
    return [{ path, message: 'broadcast sends full weights; with algorithm.lora every sync loads the adapter files' }];
  return [];
}
