import { describe, expect, test } from 'vitest';
import { z } from 'zod';
import { checkJsonSchema } from './json-schema-check.js';
import { pythonJson } from './chat-messages.js';

const schema = z.toJSONSchema(
  z.object({
    a: z.number(),
    tags: z.array(z.string()).optional(),
    mode: z.enum(['x', 'y']).optional(),
    n: z.int().optional(),
  }),
);

describe('checkJsonSchema', () => {
  test('returns undefined for arguments a zod tool schema accepts', () => {
    expect(checkJsonSchema({ a: 1.5, tags: ['p'], mode: 'x', n: 3 }, schema)).toBeUndefined();
  });

  test('returns the first problem with its path', () => {
    expect([
      checkJsonSchema({}, schema),
      checkJsonSchema({ a: '1' }, schema),
      checkJsonSchema({ a: 1, tags: ['ok', 2] }, schema),
      checkJsonSchema({ a: 1, mode: 'z' }, schema),
      checkJsonSchema({ a: 1, n: 1.5 }, schema),
      checkJsonSchema({ a: 1, extra: true }, schema),
    ]).toStrictEqual([
      "arguments: missing required property 'a'",
      'arguments.a: expected number, got string',
      'arguments.tags[1]: expected string, got integer',
      'arguments.mode: must be one of "x", "y"',
      'arguments.n: expected integer, got number',
      "arguments: unexpected property 'extra'",
    ]);
  });
});

describe('pythonJson', () => {
  test('returns json.dumps separators', () => {
    expect(pythonJson({ sum: 5, list: [1, 'a', null], nested: { ok: true } })).toBe(
      '{"sum": 5, "list": [1, "a", null], "nested": {"ok": true}}',
    );
  });
});
