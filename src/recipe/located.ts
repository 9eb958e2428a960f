/**
 * A YAML value tree in which every node remembers where it was written. Recipes are merged
 * (`extends`) and overridden (`key=value`) as these trees, so a problem found after merging can
 * still be reported at the line of the file the offending value came from.
 */

/** A position in a recipe file, or in the command-line overrides (see overrides.ts). */
export interface SourceLocation {
  readonly file: string;
  /** 1-based. */
  readonly line: number;
  /** 1-based. */
  readonly col: number;
}

/** One key of a mapping: where the key was written, and its value. */
export interface LocatedEntry {
  readonly keyLoc: SourceLocation;
  readonly node: LocatedNode;
}

/** A YAML value with its location; `loc` is where the value starts. */
export type LocatedNode =
  | { readonly kind: 'map'; readonly loc: SourceLocation; readonly entries: Map<string, LocatedEntry> }
  | { readonly kind: 'seq'; readonly loc: SourceLocation; readonly items: LocatedNode[] }
  | {
      readonly kind: 'scalar';
      readonly loc: SourceLocation;
      readonly value: unknown;
      /** `key:` with nothing after it (a null nobody wrote), as opposed to `key: null` or `key: ~`. */
      readonly empty?: true;
    };

/** A key path: mapping keys and list indices. */
export type KeyPath = readonly (string | number)[];

/** `model.engine.kind`, `tools.0.name`: the one path syntax of messages and overrides. */
export function formatPath(path: KeyPath): string {
  return path.join('.');
}

/** The plain JavaScript value of a tree (what the zod schema validates). */
export function toPlain(node: LocatedNode): unknown {
  if (node.kind === 'scalar') return node.value;
  if (node.kind === 'seq') return node.items.map(toPlain);
  const out: Record<string, unknown> = {};
  for (const [key, entry] of node.entries) out[key] = toPlain(entry.node);
  return out;
}

/** The node at `path`, if the tree has one. */
export function nodeAt(root: LocatedNode, path: KeyPath): LocatedNode | undefined {
  let node: LocatedNode | undefined = root;
  for (const segment of path) {
    node = child(node, segment)?.node;
    if (!node) return undefined;
  }
  return node;
}

/**
 * Where to report a problem at `path`: the key itself when `at` is 'key' (unknown keys), else
 * its value; a path that does not exist (a missing required key) is reported at its nearest
 * existing ancestor's key.
 */
export function locate(root: LocatedNode, path: KeyPath, at: 'key' | 'value' = 'value'): SourceLocation {
  let node: LocatedNode = root;
  let keyLoc: SourceLocation = root.loc;
  for (let i = 0; i < path.length; i++) {
    const found = child(node, path[i]!);
    if (!found) return keyLoc;
    node = found.node;
    keyLoc = found.keyLoc;
  }
  return at === 'key' ? keyLoc : node.loc;
}

function child(node: LocatedNode, segment: string | number): LocatedEntry | undefined {
  if (node.kind === 'map') return node.entries.get(String(segment));
  if (node.kind === 'seq' && typeof segment === 'number') {
    const item = node.items[segment];
    return item ? { keyLoc: item.loc, node: item } : undefined;
  }
  return undefined;
}

/**
 * Deep merge for `extends`: mappings merge key by key, anything else (lists, scalars) in
 * `over` replaces what `base` had, and a key set to null (`options: null`, `options: ~`) removes
 * what the base had there, so the key takes its default. A key with nothing after it (`train:`) is
 * not a removal: that is more often a section whose lines were lost or mis-indented, and the schema
 * reports it. Each node keeps the location of the file it came from.
 */
export function mergeNodes(base: LocatedNode, over: LocatedNode): LocatedNode {
  if (base.kind !== 'map' || over.kind !== 'map') return over;
  const entries = new Map(base.entries);
  for (const [key, entry] of over.entries) {
    const previous = entries.get(key);
    if (entry.node.kind === 'scalar' && entry.node.value === null && !entry.node.empty) entries.delete(key);
    else entries.set(key, previous ? { keyLoc: entry.keyLoc, node: mergeNodes(previous.node, entry.node) } : entry);
  }
  return { kind: 'map', loc: over.loc, entries };
}

/** A copy of `root` without the top-level key `key` (e.g. `extends` once it has been followed). */
export function withoutKey(root: LocatedNode, key: string): LocatedNode {
  if (root.kind !== 'map' || !root.entries.has(key)) return root;
  const entries = new Map(root.entries);
  entries.delete(key);
  return { ...root, entries };
}
