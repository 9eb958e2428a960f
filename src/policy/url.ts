import { notLaunchedProblems, randomInitProblems } from './engine-settings.js';
import { localModelDir } from '../util/hub-cache.js';
import { startLaunchedPolicy } from './launched-policy.js';
import type { EngineKindDefinition } from './engine-kind.js';

/** A vLLM or SGLang server someone else runs (`model.engine.url`, `protocol`); atk syncs into it. */
export const urlEngine: EngineKindDefinition = {
  name: 'url',
  checkSettings: (recipe) => [
    ...(recipe.model.engine.url === undefined
      ? [{ path: 'model.engine.kind', message: 'kind url needs model.engine.url' }]
      : []),
    ...notLaunchedProblems(recipe, 'a url engine is already running', 'a url engine is already placed'),
    ...randomInitProblems(recipe),
  ],
  modelDir: (recipe) => localModelDir(recipe.model.path),
  start: startLaunchedPolicy,
  doctorRows: async () => [],
};
