import { localModelDir } from '../util/hub-cache.js';
import { notLaunchedProblems, prefixCacheProblems, randomInitProblems } from './engine-settings.js';
import type { EngineKindDefinition } from './engine-kind.js';
import { startLaunchedPolicy } from './launched-policy.js';

/** A vLLM or SGLang server someone else runs (`model.engine.url`, `protocol`); atk syncs into it. */
export const urlEngine: EngineKindDefinition = {
  name: 'url',
  launched: false,
  syncProtocol: (engine) => engine.protocol,
  checkSettings: (recipe) => [
    ...(recipe.model.engine.url === undefined
      ? [{ path: 'model.engine.kind', message: 'kind url needs model.engine.url' }]
      : []),
    ...notLaunchedProblems(recipe, 'a url engine is already running', 'a url engine is already placed'),
    ...prefixCacheProblems(recipe),
    ...randomInitProblems(recipe),
  ],
  checkUserSettings: (engine) =>
    engine.url === undefined ? [{ path: 'user.engine.kind', message: 'kind url needs user.engine.url' }] : [],
  modelDir: (recipe) => localModelDir(recipe.model.path),
  start: (options) => startLaunchedPolicy(options, urlEngine),
  doctorRows: async () => [],
};

/**
 * What a running server (`model.engine.kind: url`) must offer: training and evaluating a checkpoint
 * load weights into it; `atk eval --checkpoint base` loads nothing and needs neither.
 */
export function urlEngineNote(kind: string, url: string | undefined, lora: boolean): string {
  if (kind !== urlEngine.name) return '';
  const needs = lora
    ? "its LoRA routes (vllm serve --enable-lora with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True, or SGLang's)"
    : "atk's weight-reload extension (vLLM: VLLM_SERVER_DEV_MODE=1 ... --worker-extension-cls atk_trainer.vllm_worker.WeightReload; SGLang has it built in)";
  return `note: the server at ${url ?? '(model.engine.url)'} needs ${needs} to train or to evaluate a checkpoint; atk eval --checkpoint base needs neither\n`;
}
