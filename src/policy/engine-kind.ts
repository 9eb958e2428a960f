import type { EngineDoctorRow } from '../engines/launch/index.js';
import type { EngineSettingProblem, EngineSettingsInput } from './engine-settings.js';
import type { ResolvedRecipe } from '../recipe/index.js';
import type { RunningPolicy } from './embedded-policy.js';
import type { StartLaunchedPolicyOptions } from './launched-policy.js';

/** The names `model.engine.kind` takes. */
export type EngineKindName = ResolvedRecipe['model']['engine']['kind'];

/**
 * What one engine kind brings, the same for every kind: the recipe settings it refuses, the model
 * directory it serves, how it starts beside the trainer (the running policy it returns syncs new
 * weights into the engine and stops both), and its `atk doctor` rows.
 */
export interface EngineKindDefinition {
  readonly name: EngineKindName;
  /** Engine settings this kind cannot honour (a recipe check, before anything starts). */
  checkSettings(recipe: EngineSettingsInput): EngineSettingProblem[];
  /** The local model directory the engine serves and the tokenizer is read from. @throws when there is none. */
  modelDir(recipe: ResolvedRecipe, recipeDir: string): string;
  /** Start the trainer and this kind's engine; whatever started is stopped again on failure. */
  start(options: StartLaunchedPolicyOptions): Promise<RunningPolicy>;
  /** What `atk doctor` checks for this kind (installed engine versions); never throws. */
  doctorRows(python?: string): Promise<EngineDoctorRow[]>;
}
