/**
 * Checks tool arguments against the subset of JSON Schema that tool input schemas use (type, enum,
 * const, properties, required, additionalProperties, items, anyOf/oneOf, minimum/maximum). Returns the
 * first problem as `path: message`, or undefined. Unknown keywords are ignored, never guessed at.
 */
export function checkJsonSchema(value: unknown, schema: unknown, path = 'arguments'): string | undefined {
  if (typeof schema !== 'object' || schema === null) return undefined;
  const s = schema as Record<string, unknown>;
  const alternatives = (s.anyOf ?? s.oneOf) as unknown[] | undefined;
  if (Array.isArray(alternatives) && !alternatives.some((alt) => checkJsonSchema(value, alt, path) === undefined)) {
    return `${path}: matches none of the allowed forms`;
  }
  if (s.type !== undefined) {
    const types = Array.isArray(s.type) ? (s.type as string[]) : [s.type as string];
    if (!types.some((t) => hasType(value, t))) return `${path}: expected ${types.join(' or ')}, got ${typeName(value)}`;
  }
  if (Array.isArray(s.enum) && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    return `${path}: must be one of ${s.enum.map((e) => JSON.stringify(e)).join(', ')}`;
  }
  if ('const' in s && JSON.stringify(s.const) !== JSON.stringify(value))
    return `${path}: must be ${JSON.stringify(s.const)}`;
  if (typeof value === 'number') {
    if (typeof s.minimum === 'number' && value < s.minimum) return `${path}: must be >= ${s.minimum}`;
    if (typeof s.maximum === 'number' && value > s.maximum) return `${path}: must be <= ${s.maximum}`;
  }
  if (Array.isArray(value) && s.items !== undefined) {
    for (let i = 0; i < value.length; i++) {
      const problem = checkJsonSchema(value[i], s.items, `${path}[${i}]`);
      if (problem) return problem;
    }
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value))
    return checkObject(value as Record<string, unknown>, s, path);
  return undefined;
}

function checkObject(value: Record<string, unknown>, s: Record<string, unknown>, path: string): string | undefined {
  const properties = (s.properties ?? {}) as Record<string, unknown>;
  for (const key of (s.required ?? []) as string[]) {
    if (!(key in value)) return `${path}: missing required property '${key}'`;
  }
  for (const [key, item] of Object.entries(value)) {
    const child = `${path}.${key}`;
    if (key in properties) {
      const problem = checkJsonSchema(item, properties[key], child);
      if (problem) return problem;
    } else if (s.additionalProperties === false) {
      return `${path}: unexpected property '${key}'`;
    } else if (typeof s.additionalProperties === 'object') {
      const problem = checkJsonSchema(item, s.additionalProperties, child);
      if (problem) return problem;
    }
  }
  return undefined;
}

function hasType(value: unknown, type: string): boolean {
  switch (type) {
    case 'integer':
      return Number.isInteger(value);
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
    case 'array':
      return Array.isArray(value);
    case 'null':
      return value === null;
    default:
      return typeof value === type;
  }
}

function typeName(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'array' : Number.isInteger(value) ? 'integer' : typeof value;
}
