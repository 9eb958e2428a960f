import { notLaunchedProblems } from './engine-settings.js';
import { resolveModelDir, startEmbeddedPolicy } from './embedded-policy.js';
import type { EngineKindDefinition } from './engine-kind.js';

/** The bundled trainer serves generation from the weights it trains: nothing to launch, nothing to install. */
export const embeddedEngine: EngineKindDefinition = {
  name: 'embedded',
  checkSettings: (recipe) =>
    notLaunchedProblems(
      recipe,
      'the embedded engine runs inside the trainer',
      "the embedded engine uses the trainer's GPUs: set model.trainer.gpus",
    ),
  modelDir: (recipe, recipeDir) => resolveModelDir(recipe.model.path, recipeDir),
  start: startEmbeddedPolicy,
  doctorRows: async () => [],
};
