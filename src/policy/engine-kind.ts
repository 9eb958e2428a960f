import type { EngineDoctorRow } from '../engines/launch/index.js';
import type { EngineConfig } from '../recipe/schema.js';
import type { ResolvedRecipe } from '../recipe/index.js';
import type { EngineSettingProblem, EngineSettingsInput } from './engine-settings.js';
import type { RunningPolicy, StartPolicyOptions } from './policy.js';

/** The names `model.engine.kind` takes. */
export type EngineKindName = ResolvedRecipe['model']['engine']['kind'];

/** The HTTP protocols atk's engine clients and weight syncs speak. */
export type EngineProtocol = 'vllm' | 'sglang';

/**
 * What one engine kind brings, the same for every kind: the recipe settings it refuses, the model
 * directory it serves, how it starts beside the trainer (the running policy it returns syncs new
 * weights into the engine and stops both), and its `atk doctor` rows. The rest of atk asks these
 * questions of the kind rather than comparing its name.
 */
export interface EngineKindDefinition {
  readonly name: EngineKindName;
  /** Whether atk launches this kind's server processes (vLLM/SGLang replicas on GPUs of their own). */
  readonly launched: boolean;
  /** A launched kind's executable when `model.engine.command` names none (`vllm`, the SGLang Python). */
  defaultExecutable?(recipe: ResolvedRecipe): string;
  /**
   * The protocol atk syncs weights over into this kind's server; undefined when nothing is sent (the
   * embedded engine serves the trainer's own weights).
   */
  syncProtocol(engine: EngineConfig): EngineProtocol | undefined;
  /** Engine settings this kind cannot honour (a recipe check, before anything starts). */
  checkSettings(recipe: EngineSettingsInput): EngineSettingProblem[];
  /**
   * Settings this kind cannot honour as the simulated user's engine (`user.engine`, never trained);
   * `started` when atk starts that engine (`user.kind: engine`).
   */
  checkUserSettings(engine: EngineConfig, started: boolean): EngineSettingProblem[];
  /** The local model directory the engine serves and the tokenizer is read from. @throws when there is none. */
  modelDir(recipe: ResolvedRecipe, recipeDir: string): string;
  /** Start the trainer and this kind's engine; whatever started is stopped again on failure. */
  start(options: StartPolicyOptions): Promise<RunningPolicy>;
  /** What `atk doctor` checks for this kind (installed engine versions); never throws. */
  doctorRows(python?: string): Promise<EngineDoctorRow[]>;
}
