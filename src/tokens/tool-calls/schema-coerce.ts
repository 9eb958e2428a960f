import type { ChatTool } from '../chat-types.js';

/**
 * The arguments of a call whose format writes every value as text (Qwen3-Coder, GLM-4.5/4.7, Seed-OSS),
 * each converted by its property's JSON-schema types as vLLM's parsers do (`coerce_to_schema_type`): values
 * of a tool with no declared properties, and keys it does not declare, stay text.
 */
export function coerceArguments(
  entries: readonly (readonly [string, string])[],
  tools: readonly ChatTool[],
  name: string,
): Record<string, unknown> {
  const properties = toolProperties(tools, name);
  // fromEntries defines own properties, so a key named "__proto__" stays a key.
  return Object.fromEntries(
    entries.map(([key, value]) => {
      const schema = properties && Object.hasOwn(properties, key) ? properties[key] : undefined;
      return [
        key,
        typeof schema === 'object' && schema !== null ? coerceToSchemaTypes(value, schemaTypes(schema)) : value,
      ];
    }),
  );
}

/** The `properties` of the tool `name`'s parameters, or undefined when it has none (or no such tool is offered). */
function toolProperties(tools: readonly ChatTool[], name: string): Readonly<Record<string, unknown>> | undefined {
  const properties = tools.find((t) => t.function.name === name)?.function.parameters.properties;
  if (typeof properties !== 'object' || properties === null || Object.keys(properties).length === 0) return undefined;
  return properties as Record<string, unknown>;
}

/**
 * Every type a schema allows: `type` (one or a list), the types of its `enum` values, and those of its
 * `anyOf` / `oneOf` / `allOf` members; `string` when none is said.
 */
export function schemaTypes(schema: unknown): string[] {
  if (typeof schema !== 'object' || schema === null) return ['string'];
  const { type, enum: values } = schema as { type?: unknown; enum?: unknown };
  const types = new Set<string>();
  for (const t of Array.isArray(type) ? type : [type]) if (typeof t === 'string') types.add(t);
  if (Array.isArray(values)) for (const v of values) types.add(jsonType(v));
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    const members = (schema as Record<string, unknown>)[key];
    if (Array.isArray(members)) for (const member of members) for (const t of schemaTypes(member)) types.add(t);
  }
  return types.size > 0 ? [...types] : ['string'];
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  if (Array.isArray(value)) return 'array';
  return typeof value === 'object' ? 'object' : 'string';
}

const ALIASES: Readonly<Record<string, string>> = {
  str: 'string',
  text: 'string',
  varchar: 'string',
  char: 'string',
  enum: 'string',
  int: 'integer',
  int32: 'integer',
  int64: 'integer',
  uint: 'integer',
  uint32: 'integer',
  uint64: 'integer',
  long: 'integer',
  short: 'integer',
  unsigned: 'integer',
  float: 'number',
  float32: 'number',
  float64: 'number',
  double: 'number',
  bool: 'boolean',
  dict: 'object',
  arr: 'array',
  list: 'array',
  sequence: 'array',
};

/** Python's int() and float() of a string: surrounding white space, a sign, `_` between digits. */
const INTEGER = /^\s*[+-]?\d(?:_?\d)*\s*$/;
const FLOAT = /^\s*[+-]?(?:\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d(?:_?\d)*)?\s*$/;

/**
 * A value's text as the first of its schema types it reads as, in vLLM's order: null (`null`, any case),
 * integer, number (finite; integral ones as integers), boolean (`true`/`false`/`1`/`0`, any case), object or
 * array (JSON, whatever it parses to), string (the text). When none applies, the text's JSON value, else
 * the text itself.
 */
export function coerceToSchemaTypes(value: string, types: readonly string[]): unknown {
  const wanted = new Set(types.map((t) => ALIASES[t.trim().toLowerCase()] ?? t.trim().toLowerCase()));
  for (const type of ['null', 'integer', 'number', 'boolean', 'object', 'array', 'string']) {
    if (!wanted.has(type)) continue;
    if (type === 'null' && value.toLowerCase() === 'null') return null;
    if (type === 'string') return value;
    if (type === 'integer' && INTEGER.test(value)) return Number(value.replace(/_/g, ''));
    if (type === 'number' && FLOAT.test(value)) {
      const number = Number(value.replace(/_/g, ''));
      if (Number.isFinite(number)) return number;
    }
    if (type === 'boolean') {
      const lower = value.trim().toLowerCase();
      if (lower === 'true' || lower === '1') return true;
      if (lower === 'false' || lower === '0') return false;
    }
    if (type === 'object' || type === 'array') {
      const parsed = finiteJson(value);
      if (parsed.ok) return parsed.value;
    }
  }
  const parsed = finiteJson(value);
  return parsed.ok ? parsed.value : value;
}

/** JSON text's value, refused where a number in it is not finite (`1e999`), which JSON cannot carry back out. */
function finiteJson(text: string): { ok: true; value: unknown } | { ok: false } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false };
  }
  const stack = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === 'number' && !Number.isFinite(item)) return { ok: false };
    if (typeof item === 'object' && item !== null) stack.push(...Object.values(item));
  }
  return { ok: true, value };
}
