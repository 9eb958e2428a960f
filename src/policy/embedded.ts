import { notLaunchedProblems } from './engine-settings.js';
import { resolveModelDir, startEmbeddedPolicy } from './embedded-policy.js';
import type { EngineKindDefinition } from './engine-kind.js';

/** The bundled trainer serves generation from the weights it trains: nothing to launch, nothing to install. */
export const embeddedEngine: EngineKindDefinition = {
  name: 'embedded',
  launched: false,
  syncProtocol: () => undefined,
  checkSettings: (recipe) =>
    notLaunchedProblems(
      recipe,
      'the embedded engine runs inside the trainer',
      "the embedded engine uses the trainer's GPUs: set model.trainer.gpus",
    ),
  checkUserSettings: (_engine, started) =>
    started
      ? [
          {
            path: 'user.engine.kind',
            message: 'a second embedded engine is not supported: use user.kind policy, or a vllm, sglang or url engine',
          },
        ]
      : [],
  modelDir: (recipe, recipeDir) => resolveModelDir(recipe.model.path, recipeDir),
  start: startEmbeddedPolicy,
  doctorRows: async () => [],
};
