/**
 * zod issues -> located one-line ConfigIssues in plain words: what was expected, what was
 * written, and for unknown keys and values the nearest valid name.
 */
import type { z } from 'zod';
import type { ConfigIssue } from '../errors/index.js';
import { closestName } from '../util/did-you-mean.js';
import { knownKeys } from './json-schema.js';
import { formatPath, locate, nodeAt, toPlain, type KeyPath, type LocatedNode } from './located.js';

type ZodIssue = z.core.$ZodIssue;

/** The keys a mapping at a recipe path may hold, for did-you-mean on unknown keys. */
export type KeysAt = (path: KeyPath) => string[];

/**
 * Every zod issue as located ConfigIssues (an unknown-keys issue becomes one per key). `base` is
 * where the parsed value sits in the recipe; `keysAt` names the valid keys (default: the recipe
 * schema's; a component's options schema for its options).
 */
export function locateZodIssues(
  issues: readonly ZodIssue[],
  root: LocatedNode,
  base: KeyPath = [],
  keysAt: KeysAt = knownKeys,
): ConfigIssue[] {
  return issues.flatMap((issue) => locateZodIssue(issue, root, [...base, ...issue.path.map(pathSegment)], keysAt));
}

function locateZodIssue(issue: ZodIssue, root: LocatedNode, path: KeyPath, keysAt: KeysAt): ConfigIssue[] {
  const at = (where: KeyPath, message: string, kind: 'key' | 'value' = 'value'): ConfigIssue => ({
    ...locate(root, where, kind),
    path: formatPath(where),
    message,
  });
  const node = nodeAt(root, path);
  const value = node ? toPlain(node) : undefined;
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map((key) => at([...path, key], unknownKeyMessage(path, key, keysAt), 'key'));
    case 'invalid_union':
      return (
        unionIssues(issue, root, path, value, keysAt) ?? [
          at(path, `expected ${unionExpectation(path)}, got ${describeValue(value)}`),
        ]
      );
    case 'invalid_type':
      return [
        at(
          path,
          node ? `expected ${typeName(issue.expected)}, got ${describeValue(value)}` : 'required key is missing',
        ),
      ];
    case 'too_small':
      return [at(path, tooSmallMessage(issue, value))];
    case 'too_big':
      return [
        at(path, `must be ${issue.inclusive ? '<=' : '<'} ${String(issue.maximum)}, got ${describeValue(value)}`),
      ];
    case 'invalid_value':
      return [at(path, invalidValueMessage(issue.values, value))];
    case 'invalid_format':
      return [
        at(
          path,
          issue.format === 'url'
            ? `must be a URL such as http://127.0.0.1:8000, got ${describeValue(value)}`
            : issue.format === 'regex'
              ? issue.message
              : `must be a valid ${issue.format}`,
        ),
      ];
    default:
      return [at(path, issue.message)];
  }
}

/** `unknown key (did you mean 'group_size'?)`, naming the valid keys when none is near. */
export function unknownKeyMessage(parent: KeyPath, key: string, keysAt: KeysAt = knownKeys): string {
  const siblings = keysAt(parent);
  const near = closestName(key, siblings);
  if (near) return `unknown key (did you mean '${near}'?)`;
  return siblings.length > 0 ? `unknown key; known keys here: ${siblings.join(', ')}` : 'unknown key';
}

/**
 * A union (e.g. a prompt that is a string or {file}) failed: report the problems of the branch
 * whose type matched what was written, if exactly one did.
 */
function unionIssues(
  issue: Extract<ZodIssue, { code: 'invalid_union' }>,
  root: LocatedNode,
  path: KeyPath,
  value: unknown,
  keysAt: KeysAt,
): ConfigIssue[] | undefined {
  if (value === undefined) return undefined;
  const typeMatched = issue.errors.filter(
    (branch) => !branch.some((b) => b.code === 'invalid_type' && b.path.length === 0),
  );
  if (typeMatched.length !== 1) return undefined;
  return locateZodIssues(typeMatched[0]!, root, path, keysAt);
}

function unionExpectation(path: KeyPath): string {
  return path[path.length - 1] === 'system_prompt' ? 'a string or {file: path}' : 'one of the allowed forms';
}

function tooSmallMessage(issue: Extract<ZodIssue, { code: 'too_small' }>, value: unknown): string {
  const minimum = Number(issue.minimum);
  if (issue.origin === 'string') return minimum <= 1 ? 'must not be empty' : `must be at least ${minimum} characters`;
  if (issue.origin === 'array') return `must have at least ${minimum} item${minimum === 1 ? '' : 's'}`;
  return `must be ${issue.inclusive ? '>=' : '>'} ${minimum}, got ${describeValue(value)}`;
}

function invalidValueMessage(values: readonly unknown[], value: unknown): string {
  const options = values.map(String);
  const near = typeof value === 'string' ? closestName(value, options) : undefined;
  const list = options.join(', ');
  return near
    ? `unknown value '${String(value)}' (did you mean '${near}'?); one of: ${list}`
    : `must be one of: ${list}; got ${describeValue(value)}`;
}

const TYPE_NAMES: Readonly<Record<string, string>> = {
  number: 'a number',
  int: 'an integer',
  string: 'a string',
  boolean: 'true or false',
  object: 'a mapping',
  record: 'a mapping',
  array: 'a list',
};

function typeName(expected: string): string {
  return TYPE_NAMES[expected] ?? expected;
}

/** How a written value reads in a message: `'abc'`, `5`, `a list`, `an empty value`. */
export function describeValue(value: unknown): string {
  if (value === null || value === undefined) return 'an empty value';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return `'${value.length > 40 ? `${value.slice(0, 37)}...` : value}'`;
  return String(value);
}

function pathSegment(segment: PropertyKey): string | number {
  return typeof segment === 'number' ? segment : String(segment);
}
