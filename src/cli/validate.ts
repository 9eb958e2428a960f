import { describePlacement, readAllocation } from '../cluster/index.js';
import { urlEngineNote } from '../policy/index.js';
import { loadRecipe, resolvedYaml } from '../recipe/index.js';
import { defineCommand } from './define-command.js';

/** Options of `atk validate`. */
export interface ValidateOptions {
  readonly recipe: string;
  readonly overrides: readonly string[];
  /** Print the recipe with every default filled in instead of a one-line verdict. */
  readonly resolved: boolean;
}

/**
 * `atk validate`: load, validate and resolve a recipe; return what to print. `agent.tool_call_format:
 * auto` is read off the model's chat template when the model is on this machine.
 * @throws ConfigError listing every problem (exit code 2); InputError naming agent.tool_call_format for
 * a chat template in no format atk parses.
 */
export async function runValidate(options: ValidateOptions): Promise<string> {
  const loaded = await loadRecipe(options.recipe, options.overrides);
  // Imported here so that loading a recipe does not load the engine kinds.
  const { withToolCallFormatIfPresent } = await import('../run/recipe-tokenizer.js');
  const recipe = await withToolCallFormatIfPresent(loaded.recipe, loaded.dir);
  if (options.resolved) return resolvedYaml(recipe);
  const verdict = `${options.recipe}: ok (${recipe.name}: ${recipe.algorithm.name}, ${recipe.train.steps} steps x ${recipe.train.tasks_per_step} tasks x ${recipe.algorithm.group_size} episodes, engine ${recipe.model.engine.kind}, tool calls ${recipe.agent.tool_call_format})\n`;
  const cluster =
    recipe.cluster.launcher === 'local' ? '' : `${describePlacement(recipe, readAllocation(recipe.cluster))}\n`;
  const url = recipe.model.engine.url === undefined ? undefined : [recipe.model.engine.url].flat().join(', ');
  return verdict + cluster + urlEngineNote(recipe.model.engine.kind, url, recipe.algorithm.lora !== undefined);
}

export const validateCommand = defineCommand({
  command: 'validate <recipe> [overrides..]',
  describe: 'Check a recipe (with key=value overrides) and report every problem at once',
  positionals: {
    recipe: { type: 'string', demandOption: true, describe: 'Recipe YAML file' },
    overrides: { type: 'string', array: true, describe: 'key.path=value overrides, parsed as YAML' },
  },
  options: {
    resolved: {
      type: 'boolean',
      default: false,
      describe: 'Print the recipe with every default and preset setting filled in',
    },
  },
  examples: [
    ['$0 validate recipes/quickstart.yaml', 'check a recipe'],
    [
      '$0 validate recipes/quickstart.yaml train.steps=5 algorithm.name=rloo --resolved',
      'show the resolved recipe with two overrides',
    ],
  ],
  handler: async (args) => {
    process.stdout.write(
      await runValidate({
        recipe: args.recipe,
        overrides: args.overrides ?? [],
        resolved: args.resolved,
      }),
    );
  },
});
