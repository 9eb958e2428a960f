/**
 * The recipe's JSON Schema, generated from the zod schema, and a walker over it. `atk schema`
 * prints it, editors complete keys with it, and recipe messages use it to find the keys that
 * exist at a path (did-you-mean, overrides of missing keys, the reference in docs/recipes.md).
 */
import { z } from 'zod';
import type { KeyPath } from './located.js';
import { RecipeSchema } from './schema.js';

/** The subset of JSON Schema that z.toJSONSchema produces for the recipe. */
export interface JsonSchemaNode {
  readonly type?: string | readonly string[];
  readonly description?: string;
  readonly default?: unknown;
  readonly enum?: readonly unknown[];
  readonly properties?: Readonly<Record<string, JsonSchemaNode>>;
  readonly required?: readonly string[];
  readonly additionalProperties?: boolean | JsonSchemaNode;
  readonly items?: JsonSchemaNode;
  readonly anyOf?: readonly JsonSchemaNode[];
  readonly minimum?: number;
  readonly exclusiveMinimum?: number;
  readonly maximum?: number;
  readonly exclusiveMaximum?: number;
  readonly minLength?: number;
  readonly pattern?: string;
  readonly format?: string;
  readonly [key: string]: unknown;
}

let cached: JsonSchemaNode | undefined;

/**
 * JSON Schema (draft 2020-12) of a recipe as written: keys with defaults are optional. This is
 * the schema editors use through `# yaml-language-server: $schema=...`.
 */
export function recipeJsonSchema(): JsonSchemaNode {
  cached ??= {
    ...(z.toJSONSchema(RecipeSchema, { io: 'input' }) as JsonSchemaNode),
    title: 'atk recipe',
  };
  return cached;
}

/** The schema nodes a value at `path` may match (several where the schema has a union). */
export function schemasAt(path: KeyPath, root: JsonSchemaNode = recipeJsonSchema()): JsonSchemaNode[] {
  let current = alternatives(root);
  for (const segment of path) {
    current = current.flatMap((node) => alternatives(childSchema(node, segment)));
    if (current.length === 0) return [];
  }
  return current;
}

/** Keys a mapping at `path` (of the recipe, or of `root`) may hold; empty when it is not a mapping or takes any key. */
export function knownKeys(path: KeyPath, root: JsonSchemaNode = recipeJsonSchema()): string[] {
  return [...new Set(schemasAt(path, root).flatMap((node) => Object.keys(node.properties ?? {})))];
}

/** Whether the mapping at `path` takes keys of its own choosing (component options). */
export function acceptsAnyKey(path: KeyPath): boolean {
  return schemasAt(path).some((node) => typeof node.additionalProperties === 'object');
}

/** A union's branches, or the node itself. */
export function alternatives(node: JsonSchemaNode | undefined): JsonSchemaNode[] {
  if (!node) return [];
  return node.anyOf ? node.anyOf.flatMap(alternatives) : [node];
}

function childSchema(node: JsonSchemaNode, segment: string | number): JsonSchemaNode | undefined {
  // `{}` is "any value" (inside component options): anything below it is allowed too.
  if (node.type === undefined && !node.properties && !node.items && !node.anyOf) return node;
  if (typeof segment === 'number' || /^\d+$/.test(segment)) {
    if (node.items) return node.items;
  }
  const key = String(segment);
  if (node.properties && Object.hasOwn(node.properties, key)) return node.properties[key];
  if (typeof node.additionalProperties === 'object') return node.additionalProperties;
  return undefined;
}
