/**
 * The engine kinds, by the name `model.engine.kind` gives: the one place a recipe's engine kind is
 * looked up. A new kind is one module beside these and one line in {@link ENGINE_KINDS}.
 */
import type { EngineDoctorRow } from '../engines/launch/index.js';
import { trainerGpuProblems, type EngineSettingProblem, type EngineSettingsInput } from './engine-settings.js';
import { embeddedEngine } from './embedded.js';
import { sglangEngine } from './sglang.js';
import type { EngineKindDefinition, EngineKindName } from './engine-kind.js';
import { urlEngine } from './url.js';
import { vllmEngine } from './vllm.js';

export type { EngineKindDefinition, EngineKindName } from './engine-kind.js';

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
  return ENGINE_KINDS[recipe.model.engine.kind];
}

/**
 * Engine and placement settings the chosen engine cannot honour, for `atk validate` and the recipe
 * loader: the kind's own refusals, then trainer GPUs that cannot be used.
 */
export function checkEngineSettings(recipe: EngineSettingsInput): EngineSettingProblem[] {
  return [...engineKind(recipe).checkSettings(recipe), ...trainerGpuProblems(recipe)];
}

/** Every kind's `atk doctor` rows, in registry order. */
export async function engineDoctorRows(python?: string): Promise<EngineDoctorRow[]> {
  const rows = await Promise.all(Object.values(ENGINE_KINDS).map((kind) => kind.doctorRows(python)));
  return rows.flat();
}
