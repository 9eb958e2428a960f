/**
 * The policy layer: everything that starts, syncs and stops the serving side. The engine kinds, by the
 * name `model.engine.kind` gives, are looked up here and nowhere else; the rest of atk asks the kind
 * (can it be placed, which protocol does it sync over, what does it refuse) rather than comparing its
 * name. A new kind is one module beside these and one line in {@link ENGINE_KINDS}.
 */
import type { EngineDoctorRow } from '../engines/launch/index.js';
import type { RecipeProblem } from '../recipe/checks.js';
import type { ResolvedRecipe } from '../recipe/index.js';
import { embeddedEngine } from './embedded.js';
import type { EngineKindDefinition, EngineKindName } from './engine-kind.js';
import { trainerGpuProblems, type EngineSettingProblem, type EngineSettingsInput } from './engine-settings.js';
import type { RunningPolicy, StartPolicyOptions } from './policy.js';
import { sglangEngine } from './sglang.js';
import { urlEngine } from './url.js';
import { vllmEngine } from './vllm.js';
import {
  fullWeightSyncOver,
  weightSyncProblemsOf,
  type FullWeightSync,
  type WeightSyncRecipe,
} from './weight-sync-mode.js';

export type { EngineKindDefinition, EngineKindName, EngineProtocol } from './engine-kind.js';
export type { EngineSettingProblem, EngineSettingsInput } from './engine-settings.js';
export type {
  PlacedListener,
  PolicyPlacement,
  PolicySync,
  PolicyTrainer,
  RunningPolicy,
  StartPolicyOptions,
} from './policy.js';
export type { FullWeightSync } from './weight-sync-mode.js';
export { engineProgressLines } from './launched-policy.js';
export { guardPolicy, type GuardablePolicy, type PolicyWatch } from './policy-guard.js';
export { urlEngineNote } from './url.js';

const ENGINE_KINDS: Readonly<Record<EngineKindName, EngineKindDefinition>> = {
  embedded: embeddedEngine,
  vllm: vllmEngine,
  sglang: sglangEngine,
  url: urlEngine,
};

/** The module of the recipe's engine kind. */
export function engineKind(recipe: {
  readonly model: { readonly engine: { readonly kind: EngineKindName } };
}): EngineKindDefinition {
  return engineKindOf(recipe.model.engine);
}

/** The module of an engine section's kind (`model.engine`, `user.engine`). */
export function engineKindOf(engine: { readonly kind: EngineKindName }): EngineKindDefinition {
  return ENGINE_KINDS[engine.kind];
}

/**
 * Start the trainer and the recipe's engine beside it; the running policy syncs new weights into the
 * engine and stops both. Whatever started is stopped again on failure.
 * @throws EngineStartError/ProviderError when an engine does not start or cannot serve the recipe;
 * TrainerError when the trainer cannot start or load the model.
 */
export function startPolicy(options: StartPolicyOptions): Promise<RunningPolicy> {
  return engineKind(options.recipe).start(options);
}

/**
 * Engine and placement settings the chosen engine cannot honour, for `atk validate` and the recipe
 * loader: the kind's own refusals, then trainer GPUs that cannot be used.
 */
export function checkEngineSettings(recipe: EngineSettingsInput): EngineSettingProblem[] {
  return [...engineKind(recipe).checkSettings(recipe), ...trainerGpuProblems(recipe)];
}

/** The simulated user's engine settings its kind cannot honour (a recipe check). */
export function checkUserEngine(recipe: Pick<ResolvedRecipe, 'user'>): RecipeProblem[] {
  const user = recipe.user;
  if (user?.engine === undefined) return [];
  return engineKindOf(user.engine).checkUserSettings(user.engine, user.kind === 'engine');
}

/**
 * The full-weight sync a recipe gets (`disk` or `broadcast`); undefined when it syncs no full weights
 * into a vLLM engine (LoRA, the embedded engine, SGLang).
 */
export function fullWeightSync(recipe: WeightSyncRecipe): FullWeightSync | undefined {
  return fullWeightSyncOver(recipe, engineKind(recipe).syncProtocol(recipe.model.engine));
}

/** A `weight_sync` the recipe cannot use (a broadcast its engine cannot take, one on the user's engine), with why. */
export function weightSyncProblems(recipe: WeightSyncRecipe): RecipeProblem[] {
  return weightSyncProblemsOf(recipe, engineKind(recipe));
}

/** Every kind's `atk doctor` rows, in registry order. */
export async function engineDoctorRows(python?: string): Promise<EngineDoctorRow[]> {
  const rows = await Promise.all(Object.values(ENGINE_KINDS).map((kind) => kind.doctorRows(python)));
  return rows.flat();
}
