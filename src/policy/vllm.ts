import { engineVersionCheck, vllmExecutable } from '../engines/launch/index.js';
import { localModelDir } from '../util/hub-cache.js';
import {
  launchedEngineProblems,
  prefixCacheProblems,
  randomInitProblems,
  vllmLoraProblems,
} from './engine-settings.js';
import type { EngineKindDefinition } from './engine-kind.js';
import { startLaunchedPolicy } from './launched-policy.js';

/** `vllm serve` replicas atk launches on their own GPUs; LoRA hot-load or a full reload after each step. */
export const vllmEngine: EngineKindDefinition = {
  name: 'vllm',
  launched: true,
  defaultExecutable: () => vllmExecutable(),
  syncProtocol: () => 'vllm',
  checkSettings: (recipe) => [
    ...launchedEngineProblems(recipe),
    ...prefixCacheProblems(recipe),
    ...vllmLoraProblems(recipe),
    ...randomInitProblems(recipe),
  ],
  checkUserSettings: () => [],
  modelDir: (recipe) => localModelDir(recipe.model.path),
  start: (options) => startLaunchedPolicy(options, vllmEngine),
  doctorRows: async () => [await engineVersionCheck('vllm')],
};
