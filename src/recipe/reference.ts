/**
 * The recipe reference (every key, its type, default and meaning) generated from the JSON
 * Schema. docs/recipes.md carries it between markers, and a test keeps the two identical.
 */
import { alternatives, recipeJsonSchema, type JsonSchemaNode } from './json-schema.js';

/** One documented key. `key` uses `[]` for "each list item": `tools[].name`. */
export interface ReferenceRow {
  readonly key: string;
  readonly type: string;
  /** The default as YAML would show it, `required`, or `-` for an optional key without one. */
  readonly default: string;
  readonly meaning: string;
}

/** The page, relative to the project root, that carries the generated reference. */
export const RECIPE_REFERENCE_PAGE = 'docs/recipes.md';
export const REFERENCE_BEGIN = '<!-- recipe-reference:begin -->';
export const REFERENCE_END = '<!-- recipe-reference:end -->';

/** Every key of the recipe schema, sections before their keys, in schema order. */
export function recipeReference(schema: JsonSchemaNode = recipeJsonSchema()): ReferenceRow[] {
  const rows: ReferenceRow[] = [];
  walk(schema, '', rows);
  return rows;
}

/** The reference as a Markdown table, markers included. */
export function referenceMarkdown(rows: readonly ReferenceRow[] = recipeReference()): string {
  const lines = rows.map(
    (r) =>
      `| \`${r.key}\` | ${escapeCell(r.type)} | ${r.default === 'required' || r.default === '-' ? r.default : `\`${escapeCell(r.default)}\``} | ${escapeCell(r.meaning)} |`,
  );
  return [
    REFERENCE_BEGIN,
    '| key | type | default | meaning |',
    '| --- | --- | --- | --- |',
    ...lines,
    REFERENCE_END,
  ].join('\n');
}

/** Markdown table cell text: pipes escaped, angle brackets as entities (else they read as HTML). */
export function escapeCell(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/\|/g, '\\|')
    .replace(/\n/g, ' ');
}

/** The inverse of escapeCell. */
export function unescapeCell(text: string): string {
  return text.replace(/\\\|/g, '|').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

function walk(node: JsonSchemaNode, prefix: string, rows: ReferenceRow[]): void {
  const required = new Set(node.required ?? []);
  for (const [name, child] of Object.entries(node.properties ?? {})) {
    const key = `${prefix}${name}`;
    rows.push({
      key,
      type: typeOf(child),
      default: defaultOf(child, required.has(name)),
      meaning: child.description ?? '',
    });
    for (const branch of alternatives(child)) {
      if (branch.properties) walk(branch, `${key}.`, rows);
      if (branch.items?.properties) walk(branch.items, `${key}[].`, rows);
    }
  }
}

function typeOf(node: JsonSchemaNode): string {
  const branches = alternatives(node);
  if (branches.length > 1) return branches.map(typeOf).join(' or ');
  if (node.enum) return `one of: ${node.enum.map(String).join(', ')}`;
  const type = Array.isArray(node.type) ? node.type.join(' or ') : (node.type ?? 'any');
  if (type === 'array') return `list of ${node.items ? typeOf(node.items) : 'any'}`;
  if (type === 'object') return 'mapping';
  return [type, ...bounds(node)].join(', ');
}

function bounds(node: JsonSchemaNode): string[] {
  const out: string[] = [];
  if (node.exclusiveMinimum !== undefined) out.push(`> ${node.exclusiveMinimum}`);
  if (node.minimum !== undefined) out.push(`>= ${node.minimum}`);
  if (node.exclusiveMaximum !== undefined) out.push(`< ${node.exclusiveMaximum}`);
  // Integers carry Number.MAX_SAFE_INTEGER as their maximum; that is no real bound.
  if (node.maximum !== undefined && node.maximum < Number.MAX_SAFE_INTEGER) out.push(`<= ${node.maximum}`);
  if (node.minLength !== undefined && node.minLength > 0) out.push('non-empty');
  if (node.format) out.push(node.format);
  return out;
}

function defaultOf(node: JsonSchemaNode, required: boolean): string {
  if ('default' in node) return inline(node.default);
  return required ? 'required' : '-';
}

/** A value as YAML flow style: `[q_proj, k_proj]`, `{}`, `0.85`. */
function inline(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(inline).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value)
      .map(([k, v]) => `${k}: ${inline(v)}`)
      .join(', ')}}`;
  }
  return String(value);
}
