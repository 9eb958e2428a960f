import { launchedEngineProblems, randomInitProblems, vllmLoraProblems } from './engine-settings.js';
import { engineVersionCheck } from '../engines/launch/index.js';
import { localModelDir } from '../util/hub-cache.js';
import { startLaunchedPolicy } from './launched-policy.js';
import type { EngineKindDefinition } from './engine-kind.js';

/** `vllm serve` replicas atk launches on their own GPUs; LoRA hot-load or a full reload after each step. */
export const vllmEngine: EngineKindDefinition = {
  name: 'vllm',
  checkSettings: (recipe) => [
    ...launchedEngineProblems(recipe),
    ...vllmLoraProblems(recipe),
    ...randomInitProblems(recipe),
  ],
  modelDir: (recipe) => localModelDir(recipe.model.path),
  start: startLaunchedPolicy,
  doctorRows: async () => [await engineVersionCheck('vllm')],
};
