/**
 * A second model served beside the policy and never trained (a distillation teacher, the summariser of
 * `agent.context.model`): on the embedded engine, a second trainer process that only serves (the
 * embedded policy's own start); on vllm/sglang/url, the never-trained engine start the simulated user
 * shares. One start for both, so each new fixed model is a caller, not a third launcher.
 */
import { join } from 'node:path';
import { rolloutTimeoutsMs } from './rollout-timeouts.js';
import type { Engine } from '../engines/index.js';
import type { EngineConfig } from '../recipe/schema.js';
import type { ResolvedRecipe } from '../recipe/index.js';
import { startEmbeddedPolicy } from './embedded-policy.js';
import type { EngineProtocol } from './engine-kind.js';
import { engineKindOf } from './index.js';
import type { StartPolicyOptions } from './policy.js';
import { startServingEngine } from './user-engine.js';

/** A running fixed model: its engine, the protocol it speaks, and how to stop it. */
export interface FixedModel {
  readonly engine: Engine;
  readonly protocol: EngineProtocol;
  close(): Promise<void>;
}

/** Which fixed model, and where its logs and served name go. */
export interface FixedModelSpec {
  /** As the recipe wrote it (a hub id for vllm/sglang/url, sent as the model name of a url engine). */
  readonly path: string;
  /** Its local directory (the embedded engine loads it; the caller has checked it holds a model). */
  readonly modelDir: string;
  readonly engine: EngineConfig;
  /** The name a launched engine serves it under. */
  readonly servedModelName: string;
  /** The recipe key naming its engine kind, for the refusal of a kind that cannot serve it. */
  readonly what: string;
  /** Its logs go to `<logsDir>/<logsName>/`. */
  readonly logsName: string;
}

/** Whether `engine` is the embedded kind (served by a trainer process of its own). */
export function isEmbeddedEngine(engine: EngineConfig): boolean {
  const kind = engineKindOf(engine);
  return !kind.launched && kind.syncProtocol(engine) === undefined;
}

/**
 * Starts a fixed model: embedded, a trainer process of its own that loads `modelDir` (pretrained, its own
 * tokenizer, nothing trained) with model.trainer's device and threads; else a vllm/sglang engine launched
 * beside the policy's, or a url engine attached.
 * @throws TrainerError when its trainer cannot start or load it; EngineStartError when a launched engine
 * does not start.
 */
export async function startFixedModel(
  spec: FixedModelSpec,
  options: Pick<StartPolicyOptions, 'recipe' | 'recipeDir' | 'logsDir' | 'runDir' | 'signal'>,
): Promise<FixedModel> {
  const { recipe } = options;
  if (isEmbeddedEngine(spec.engine)) {
    const policy = await startEmbeddedPolicy({
      ...options,
      recipe: fixedModelRecipe(recipe, spec.modelDir, spec.engine),
      logsDir: join(options.logsDir, spec.logsName),
      loadsWeights: false,
    });
    return { engine: policy.engine, protocol: 'vllm', close: () => policy.close() };
  }
  const served = await startServingEngine(spec.path, spec.engine, {
    recipeDir: options.recipeDir,
    runDir: options.runDir,
    seed: recipe.seed,
    requestTimeoutMs: rolloutTimeoutsMs(recipe.rollout).request,
    servedModelName: spec.servedModelName,
    what: spec.what,
    logsName: spec.logsName,
  });
  return { engine: served.engine, protocol: served.protocol, close: served.stop };
}

/**
 * The recipe a fixed model on the embedded engine starts from: the policy's, with the fixed model's
 * weights in `model` (pretrained, its own directory's tokenizer) and nothing that trains (no LoRA, no
 * reference model).
 */
function fixedModelRecipe(recipe: ResolvedRecipe, modelDir: string, engine: EngineConfig): ResolvedRecipe {
  const { tokenizer: _tokenizer, chat_template: _template, ...model } = recipe.model;
  const { lora: _lora, ...algorithm } = recipe.algorithm;
  return {
    ...recipe,
    model: { ...model, path: modelDir, init: 'pretrained', engine },
    algorithm: { ...algorithm, kl_coef: 0 },
  };
}
