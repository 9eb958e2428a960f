/**
 * The options of the recipe's registered components (dataset, tools, rewards, weighted reward
 * components), parsed with the schema each component declares (its `options`, the one it builds
 * with), so a bad option is a recipe problem at its key before anything starts.
 */
import { z } from 'zod';
import '../builtins.js';
import { datasets } from '../datasets/index.js';
import { rewardComponents } from '../rewards/components.js';
import { rewards } from '../rewards/index.js';
import { toolComponent } from '../tools/components.js';
import { tools } from '../tools/index.js';
import type { ComponentOptionsSchema } from '../util/component-options.js';
import type { Registry } from '../util/registry.js';
import { knownKeys, type JsonSchemaNode } from './json-schema.js';
import type { KeyPath } from './located.js';
import type { ResolvedRecipe } from './resolve.js';

/** One component whose options failed its schema: where they were written and what was wrong. */
export interface ComponentOptionsFailure {
  /** Recipe key the options were written under, e.g. `reward.components.1.options`. */
  readonly path: string;
  readonly issues: readonly z.core.$ZodIssue[];
  /** The valid keys of a mapping at a path inside the options, for did-you-mean. */
  keysAt(path: KeyPath): string[];
}

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
    ...rewardComponents(recipe.reward).map(({ name, options, optionsPath }) => ({ registry: rewards, name, options, path: optionsPath })),
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
    keysAt: (at) => knownKeys(at.slice(base), (json ??= z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchemaNode)),
  };
}
