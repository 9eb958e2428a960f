import { launchedEngineProblems, randomInitProblems } from './engine-settings.js';
import { engineVersionCheck } from '../engines/launch/index.js';
import { localModelDir } from '../util/hub-cache.js';
import { startLaunchedPolicy } from './launched-policy.js';
import type { EngineKindDefinition } from './engine-kind.js';

/** `sglang.launch_server` replicas atk launches on their own GPUs; weights reloaded from disk after each step. */
export const sglangEngine: EngineKindDefinition = {
  name: 'sglang',
  checkSettings: (recipe) => [...launchedEngineProblems(recipe), ...randomInitProblems(recipe)],
  modelDir: (recipe) => localModelDir(recipe.model.path),
  start: startLaunchedPolicy,
  doctorRows: async (python) => [await engineVersionCheck('sglang', python)],
};
