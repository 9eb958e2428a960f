/**
 * The options of the recipe's registered components (dataset, tools, rewards, weighted reward
 * components), parsed with the schema each component declares (its `options`, the one it builds
 * with), so a bad option is a recipe problem at its key before anything starts.
 */
import { z } from 'zod';
import type { ComponentOptionsFailure } from '../recipe/checks.js';
import { knownKeys, type JsonSchemaNode } from '../recipe/json-schema.js';
import type { ResolvedRecipe } from '../recipe/resolve.js';
import { datasets } from '../datasets/index.js';
import { rewardComponents } from '../rewards/components.js';
import { rewards } from '../rewards/index.js';
import { toolComponent } from '../tools/components.js';
import { tools } from '../tools/index.js';
import type { ComponentOptionsSchema } from '../util/component-options.js';
import type { Registry } from '../util/registry.js';

interface Entry {
  readonly registry: Registry<ComponentOptionsSchema>;
  readonly name: string;
  readonly options: Readonly<Record<string, unknown>>;
  readonly path: string;
}

/**
 * Every registered component's options that its schema rejects. Unknown names are skipped: the
 * name check reports them. Loads the modules of the components the recipe names.
 */
export async function componentOptionsFailures(recipe: ResolvedRecipe): Promise<ComponentOptionsFailure[]> {
  const entries: Entry[] = [
    { registry: datasets, name: recipe.dataset.name, options: recipe.dataset.options, path: 'dataset.options' },
    ...recipe.tools.map((tool, i) => {
      const { name, options, optionsKey } = toolComponent(tool);
      return { registry: tools, name, options, path: optionsKey ? `tools.${i}.${optionsKey}` : `tools.${i}` };
    }),
    ...rewardComponents(recipe.reward).map(({ name, options, optionsPath }) => ({
      registry: rewards,
      name,
      options,
      path: optionsPath,
    })),
  ];
  const failures = await Promise.all(entries.map(failure));
  return failures.filter((f): f is ComponentOptionsFailure => f !== undefined);
}

async function failure({ registry, name, options, path }: Entry): Promise<ComponentOptionsFailure | undefined> {
  if (!registry.has(name)) return undefined;
  const schema = (await registry.get(name)).options;
  const parsed = schema?.safeParse(options);
  if (!schema || !parsed || parsed.success) return undefined;
  const base = path.split('.').length;
  let json: JsonSchemaNode | undefined;
  return {
    path,
    issues: parsed.error.issues,
    keysAt: (at) =>
      knownKeys(
        at.slice(base),
        (json ??= z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchemaNode),
      ),
  };
}
