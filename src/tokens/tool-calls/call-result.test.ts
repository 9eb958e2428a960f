import { describe, expect, test } from 'vitest';
import { callWithJsonArguments, echo, MAX_ARGUMENT_DEPTH, malformed, namedCall, nestingDepth } from './call-result.js';

describe('namedCall', () => {
  test('returns the call when its arguments are an object, else bad_call naming "arguments"', () => {
    expect(namedCall('f', { a: 1 }, 'raw')).toStrictEqual({ ok: true, name: 'f', arguments: { a: 1 }, raw: 'raw' });
    for (const args of [null, [1], 'a=1', 2])
      expect(namedCall('f', args, 'raw')).toStrictEqual({
        ok: false,
        kind: 'bad_call',
        name: 'f',
        raw: 'raw',
        message: `"arguments" of the call to 'f' must be a JSON object`,
      });
    expect(namedCall('f', [1], 'raw', 'parameters')).toMatchObject({
      message: `"parameters" of the call to 'f' must be a JSON object`,
    });
  });
});

describe('nestingDepth', () => {
  test('counts the deepest nesting of arrays and objects, scalars and null inside them not counted', () => {
    expect(
      [1, 'a', null, {}, [], { a: null }, { a: [1, { b: 'x' }], c: {} }, [[[]], []]].map(nestingDepth),
    ).toStrictEqual([0, 0, 0, 1, 1, 1, 3, 3]);
  });

  test('accepts arguments nested 64 levels deep and rejects 65, objects and arrays alike', () => {
    const nested = (depth: number, wrap: (inner: unknown) => unknown): Record<string, unknown> => {
      let value: unknown = 1;
      for (let level = 1; level < depth; level++) value = wrap(value);
      return { x: value };
    };
    expect(MAX_ARGUMENT_DEPTH).toBe(64);
    for (const wrap of [(v: unknown) => [v], (v: unknown) => ({ k: v })]) {
      expect(nestingDepth(nested(64, wrap))).toBe(64);
      expect(namedCall('f', nested(64, wrap), 'raw').ok).toBe(true);
      expect(namedCall('f', nested(65, wrap), 'raw')).toStrictEqual({
        ok: false,
        kind: 'bad_call',
        name: 'f',
        raw: 'raw',
        message: "the arguments of the call to 'f' nest deeper than 64 levels",
      });
    }
  });
});

describe('callWithJsonArguments', () => {
  test('returns the call of JSON arguments, bad_call for null and bad_json for broken JSON', () => {
    expect(callWithJsonArguments('f', '{"a": [true]}', 'raw')).toStrictEqual({
      ok: true,
      name: 'f',
      arguments: { a: [true] },
      raw: 'raw',
    });
    expect(callWithJsonArguments('f', 'null', 'raw')).toStrictEqual({
      ok: false,
      kind: 'bad_call',
      name: 'f',
      raw: 'raw',
      message: `"arguments" of the call to 'f' must be a JSON object`,
    });
    expect(callWithJsonArguments('f', '{"a": 1,}', 'raw')).toStrictEqual({
      ok: false,
      kind: 'bad_json',
      name: 'f',
      raw: 'raw',
      message:
        "the arguments of the call to 'f' are not valid JSON (Expected double-quoted property name in JSON at position 8 (line 1 column 9))",
    });
  });
});

describe('malformed and echo', () => {
  test('returns a failed call with the name only where one was salvaged, its reason on one line', () => {
    expect(malformed('unterminated', 'raw', echo('a\r\nb'))).toStrictEqual({
      ok: false,
      kind: 'unterminated',
      raw: 'raw',
      message: 'a\\r\\nb',
    });
    expect(malformed('bad_json', 'raw', 'm', 'f')).toStrictEqual({
      ok: false,
      kind: 'bad_json',
      name: 'f',
      raw: 'raw',
      message: 'm',
    });
  });
});
