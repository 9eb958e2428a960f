/**
 * Command-line overrides `a.b.c=value`. The value is YAML (`8`, `true`, `1e-5`, `"text"`, a
 * flow list `[0, 1]`), validated with the rest of the recipe.
 *
 * Location convention: overrides read as one virtual file `<overrides>` in which the Nth
 * override is line N, and the column counts characters in that argument. So
 * `<overrides>:2:22  algorithm.group_size: must be > 0, got 0` is the second override, value at
 * column 22.
 */
import type { ConfigIssue } from '../errors/index.js';
import { closestName } from '../util/did-you-mean.js';
import { knownKeys, schemasAt } from './json-schema.js';
import { formatPath, type KeyPath, type LocatedEntry, type LocatedNode, type SourceLocation } from './located.js';
import { parseYamlNode } from './source.js';

/** The name under which override problems are reported. */
export const OVERRIDES_FILE = '<overrides>';

/** One parsed `key.path=value`. */
export interface ParsedOverride {
  readonly path: KeyPath;
  /** Where each path segment starts, for locating unknown keys. */
  readonly segmentLocs: readonly SourceLocation[];
  readonly value: LocatedNode;
}

/** Parse the `key=value` arguments; every malformed one is an issue. */
export function parseOverrides(args: readonly string[]): { overrides: ParsedOverride[]; issues: ConfigIssue[] } {
  const overrides: ParsedOverride[] = [];
  const issues: ConfigIssue[] = [];
  args.forEach((arg, index) => {
    const line = index + 1;
    const loc = (col: number): SourceLocation => ({ file: OVERRIDES_FILE, line, col });
    const eq = arg.indexOf('=');
    const key = eq < 0 ? arg : arg.slice(0, eq);
    const segments = key.split('.');
    if (eq < 0 || segments.some((s) => s.trim() === '')) {
      issues.push({
        ...loc(1),
        path: '',
        message: `bad override '${arg}': expected key.path=value, e.g. train.steps=10`,
      });
      return;
    }
    const segmentLocs: SourceLocation[] = [];
    let col = 1;
    for (const segment of segments) {
      segmentLocs.push(loc(col));
      col += segment.length + 1;
    }
    const path = segments.map((s) => (/^\d+$/.test(s) ? Number(s) : s));
    const parsed = parseYamlNode(arg.slice(eq + 1), (offset) => loc(eq + 2 + offset));
    if (!parsed.root) {
      issues.push(
        ...parsed.issues.map((issue) => ({
          ...issue,
          path: formatPath(path),
          message: `bad override value: ${issue.message}`,
        })),
      );
      return;
    }
    issues.push(...parsed.issues);
    overrides.push({ path, segmentLocs, value: parsed.root });
  });
  return { overrides, issues };
}

/**
 * Apply overrides to the merged recipe tree. A path the schema does not have is an issue naming
 * the nearest existing key; the recipe itself is checked later, with the overrides in place.
 */
export function applyOverrides(
  root: LocatedNode,
  overrides: readonly ParsedOverride[],
): { root: LocatedNode; issues: ConfigIssue[] } {
  const issues: ConfigIssue[] = [];
  let current = root;
  for (const override of overrides) {
    const problem = pathProblem(override);
    if (problem) {
      issues.push(problem);
      continue;
    }
    const result = setIn(current, override, 0);
    if (typeof result === 'string')
      issues.push({ ...override.segmentLocs[0]!, path: formatPath(override.path), message: result });
    else current = result;
  }
  return { root: current, issues };
}

function pathProblem(override: ParsedOverride): ConfigIssue | undefined {
  const { path, segmentLocs } = override;
  if (path[0] === 'extends')
    return { ...segmentLocs[0]!, path: 'extends', message: 'extends cannot be overridden; write it in the recipe' };
  for (let i = 0; i < path.length; i++) {
    const prefix = path.slice(0, i + 1);
    if (schemasAt(prefix).length > 0) continue;
    const parent = path.slice(0, i);
    const siblings = knownKeys(parent);
    const near = closestName(String(path[i]), siblings);
    const message = near
      ? `unknown key (did you mean '${formatPath([...parent, near])}'?)`
      : siblings.length > 0
        ? `unknown key; ${parent.length > 0 ? formatPath(parent) : 'a recipe'} has: ${siblings.join(', ')}`
        : `unknown key: ${formatPath(parent)} has no sub-keys`;
    return { ...segmentLocs[i]!, path: formatPath(prefix), message };
  }
  return undefined;
}

/** The tree with the override's value at its path, or why it cannot go there. */
function setIn(node: LocatedNode | undefined, override: ParsedOverride, depth: number): LocatedNode | string {
  if (depth === override.path.length) return override.value;
  const segment = override.path[depth]!;
  const keyLoc = override.segmentLocs[depth]!;
  if (node?.kind === 'seq') {
    if (typeof segment !== 'number')
      return `${formatPath(override.path.slice(0, depth))} is a list; index it by number, e.g. ${formatPath([...override.path.slice(0, depth), 0])}`;
    if (segment > node.items.length)
      return `index ${segment} is past the end of ${formatPath(override.path.slice(0, depth))} (${node.items.length} items)`;
    const next = setIn(node.items[segment], override, depth + 1);
    if (typeof next === 'string') return next;
    const items = [...node.items];
    items[segment] = next;
    return { ...node, items };
  }
  if (typeof segment === 'number' && schemasAt(override.path.slice(0, depth)).some((s) => s.items)) {
    if (segment > 0)
      return `index ${segment} is past the end of ${formatPath(override.path.slice(0, depth))} (0 items)`;
    const next = setIn(undefined, override, depth + 1);
    return typeof next === 'string' ? next : { kind: 'seq', loc: keyLoc, items: [next] };
  }
  // A mapping here (new, or replacing a scalar where the schema also allows a mapping).
  const entries = new Map<string, LocatedEntry>(node?.kind === 'map' ? node.entries : []);
  const next = setIn(entries.get(String(segment))?.node, override, depth + 1);
  if (typeof next === 'string') return next;
  entries.set(String(segment), { keyLoc, node: next });
  return { kind: 'map', loc: node?.kind === 'map' ? node.loc : keyLoc, entries };
}
