import { engineVersionCheck } from '../engines/launch/index.js';
import { localModelDir } from '../util/hub-cache.js';
import { launchedEngineProblems, prefixCacheProblems, randomInitProblems } from './engine-settings.js';
import type { EngineKindDefinition } from './engine-kind.js';
import { startLaunchedPolicy } from './launched-policy.js';

/** `sglang.launch_server` replicas atk launches on their own GPUs; weights reloaded from disk after each step. */
export const sglangEngine: EngineKindDefinition = {
  name: 'sglang',
  launched: true,
  defaultExecutable: (recipe) => recipe.model.trainer.python ?? 'python3',
  syncProtocol: () => 'sglang',
  checkSettings: (recipe) => [
    ...launchedEngineProblems(recipe),
    ...prefixCacheProblems(recipe),
    ...randomInitProblems(recipe),
  ],
  checkUserSettings: () => [],
  modelDir: (recipe) => localModelDir(recipe.model.path),
  start: (options) => startLaunchedPolicy(options, sglangEngine),
  doctorRows: async (python) => [await engineVersionCheck('sglang', python)],
};
