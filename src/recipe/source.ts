/**
 * Reading one recipe file: text checks (missing, directory, binary), YAML parsing with the yaml
 * package's node ranges, and conversion to a located tree. Every problem becomes a ConfigIssue.
 */
import { readFile, stat } from 'node:fs/promises';
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node } from 'yaml';
import type { ConfigIssue } from '../errors/index.js';
import type { LocatedEntry, LocatedNode, SourceLocation } from './located.js';
import { syntaxIssues } from './yaml-errors.js';

/** One parsed file: its tree (undefined when it could not be parsed) and its text. */
export interface ParsedSource {
  readonly file: string;
  readonly text: string;
  readonly root: LocatedNode | undefined;
  readonly issues: readonly ConfigIssue[];
}

/**
 * Read and parse a recipe file. `label` is how the file is named in messages (the path as the
 * user wrote it, or relative to the current directory for files reached through `extends`).
 */
export async function readRecipeSource(path: string, label: string): Promise<ParsedSource> {
  const fail = (message: string, line = 1, col = 1): ParsedSource => ({
    file: label,
    text: '',
    root: undefined,
    issues: [{ file: label, line, col, path: '', message }],
  });
  let bytes: Buffer;
  try {
    if ((await stat(path)).isDirectory()) return fail('is a directory, not a recipe file');
    bytes = await readFile(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return fail(code === 'ENOENT' ? 'file not found' : `cannot read file (${code ?? String(error)})`);
  }
  const binaryAt = firstBinaryByte(bytes);
  if (binaryAt !== undefined) {
    const { line, col } = lineColOfByte(bytes, binaryAt);
    return fail('binary content, not a YAML text file', line, col);
  }
  return parseRecipeText(bytes.toString('utf8'), label);
}

/** Parse recipe text (already read) into a located tree. */
export function parseRecipeText(text: string, file: string): ParsedSource {
  const lineCounter = new LineCounter();
  const at = (offset: number): SourceLocation => ({ file, ...lineCounter.linePos(offset) });
  const parsed = parseYamlNode(text, at, lineCounter);
  const fail = (offset: number, message: string): ParsedSource => ({
    file,
    text,
    root: undefined,
    issues: [{ ...at(offset), path: '', message }],
  });
  if (!parsed.root) return { file, text, root: undefined, issues: parsed.issues };
  const { root } = parsed;
  if (root.kind === 'scalar' && root.value === null)
    return fail(0, 'empty recipe: expected a mapping with at least name, model and reward');
  if (root.kind !== 'map')
    return {
      file,
      text,
      root: undefined,
      issues: [
        {
          ...root.loc,
          path: '',
          message: `a recipe must be a mapping of keys, not ${root.kind === 'seq' ? 'a list' : 'a single value'}`,
        },
      ],
    };
  return { file, text, root, issues: parsed.issues };
}

/**
 * Parse YAML text into a located tree; `at` turns an offset in `text` into a location (the
 * command-line overrides use this with their own convention). No root when the YAML is broken.
 */
export function parseYamlNode(
  text: string,
  at: (offset: number) => SourceLocation,
  lineCounter = new LineCounter(),
): { root: LocatedNode | undefined; issues: ConfigIssue[] } {
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const syntax = syntaxIssues(doc.errors, text, at);
  if (syntax.length > 0) return { root: undefined, issues: syntax };
  const converted = toLocated(doc.contents, doc, at, []);
  return { root: converted.node, issues: converted.issues };
}

interface Converted {
  readonly node: LocatedNode;
  readonly issues: ConfigIssue[];
}

/** `emptyLoc` locates a missing value (`key:` with nothing after it): at its key. */
function toLocated(
  node: Node | null,
  doc: Document,
  at: (offset: number) => SourceLocation,
  seen: Node[],
  emptyLoc?: SourceLocation,
): Converted {
  if (node === null) return { node: { kind: 'scalar', loc: emptyLoc ?? at(0), value: null, empty: true }, issues: [] };
  const loc = at(node.range?.[0] ?? 0);
  if (isAlias(node)) {
    const target = node.resolve(doc);
    if (!target)
      return {
        node: { kind: 'scalar', loc, value: null },
        issues: [{ ...loc, path: '', message: `unknown YAML alias *${node.source}` }],
      };
    if (seen.includes(target))
      return {
        node: { kind: 'scalar', loc, value: null },
        issues: [{ ...loc, path: '', message: `YAML alias *${node.source} refers to itself` }],
      };
    return toLocated(target, doc, at, [...seen, target]);
  }
  const issues: ConfigIssue[] = [];
  if (isMap(node)) {
    const entries = new Map<string, LocatedEntry>();
    for (const pair of node.items) {
      const keyNode = pair.key as Node | null;
      const key = isScalar(keyNode) ? String(keyNode.value) : String(keyNode);
      const keyLoc = at(keyNode?.range?.[0] ?? 0);
      const value = toLocated(pair.value as Node | null, doc, at, seen, keyLoc);
      entries.set(key, { keyLoc, node: value.node });
      issues.push(...value.issues);
    }
    return { node: { kind: 'map', loc, entries }, issues };
  }
  if (isSeq(node)) {
    const items: LocatedNode[] = [];
    for (const item of node.items) {
      const value = toLocated(item as Node | null, doc, at, seen);
      items.push(value.node);
      issues.push(...value.issues);
    }
    return { node: { kind: 'seq', loc, items }, issues };
  }
  const value = isScalar(node) ? node.value : null;
  // `key:` parses to a null scalar of no text: a value nobody wrote, not a `null` or `~` (located.ts).
  const empty = value === null && node.range?.[0] !== undefined && node.range[0] === node.range[1];
  return { node: { kind: 'scalar', loc, value, ...(empty ? { empty: true as const } : {}) }, issues };
}

/** Offset of the first byte that cannot be in a text recipe (NUL, or invalid UTF-8). */
function firstBinaryByte(bytes: Buffer): number | undefined {
  const nul = bytes.indexOf(0);
  if (nul >= 0) return nul;
  const decoded = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  // U+FFFD marks an invalid sequence, unless the file itself spells U+FFFD (bytes EF BF BD).
  for (let bad = decoded.indexOf('\uFFFD'); bad >= 0; bad = decoded.indexOf('\uFFFD', bad + 1)) {
    const offset = Buffer.byteLength(decoded.slice(0, bad), 'utf8');
    if (!(bytes[offset] === 0xef && bytes[offset + 1] === 0xbf && bytes[offset + 2] === 0xbd)) return offset;
  }
  return undefined;
}

function lineColOfByte(bytes: Buffer, offset: number): { line: number; col: number } {
  const before = bytes.subarray(0, offset);
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < before.length; i++) {
    if (before[i] === 0x0a) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, col: offset - lineStart + 1 };
}
