import { describe, expect, test } from 'vitest';
import { jsonCall, parseJsonCall, salvageName } from './json-call.js';

const NOT_A_CALL = 'a tool call must be a JSON object with a string "name" and an object "arguments"';

describe('parseJsonCall', () => {
  test('returns the call of a JSON object with a name and arguments, or none', () => {
    expect(parseJsonCall('{"name": "f", "arguments": {"a": [1, null]}}', 'raw')).toStrictEqual({
      ok: true,
      name: 'f',
      arguments: { a: [1, null] },
      raw: 'raw',
    });
    expect(parseJsonCall('{"name": "now"}', 'raw')).toStrictEqual({ ok: true, name: 'now', arguments: {}, raw: 'raw' });
  });

  test('returns bad_call for JSON that is no object with a name: null, a list, a string, an empty name', () => {
    for (const body of ['null', '"f"', '{"name": "", "arguments": {}}', '{"name": 1}'])
      expect(parseJsonCall(body, body)).toStrictEqual({ ok: false, kind: 'bad_call', raw: body, message: NOT_A_CALL });
    expect(parseJsonCall('[{"name": "f"}]', 'raw')).toStrictEqual({
      ok: false,
      kind: 'bad_call',
      name: 'f',
      raw: 'raw',
      message: NOT_A_CALL,
    });
  });

  test('returns bad_json with the name salvaged from the broken text', () => {
    expect(parseJsonCall('{"name": "f", "arguments": {', 'raw')).toStrictEqual({
      ok: false,
      kind: 'bad_json',
      name: 'f',
      raw: 'raw',
      message:
        "the tool call is not valid JSON (Expected property name or '}' in JSON at position 28 (line 1 column 29))",
    });
    expect(salvageName('{"name" : "get_weather", "arguments": {')).toBe('get_weather');
  });
});

describe('jsonCall', () => {
  test('reads the arguments from "arguments" when no other key is named', () => {
    expect(jsonCall({ name: 'f', arguments: { a: 1 } }, 'raw')).toStrictEqual({
      ok: true,
      name: 'f',
      arguments: { a: 1 },
      raw: 'raw',
    });
    expect(jsonCall({ arguments: {} }, 'raw')).toStrictEqual({
      ok: false,
      kind: 'bad_call',
      raw: 'raw',
      message: NOT_A_CALL,
    });
  });

  test('reads the arguments from whichever of several keys is present, and refuses a call with two', () => {
    const keys = ['parameters', 'arguments'];
    expect(jsonCall({ name: 'f', arguments: { a: 1 } }, 'raw', keys)).toStrictEqual({
      ok: true,
      name: 'f',
      arguments: { a: 1 },
      raw: 'raw',
    });
    expect(jsonCall({ name: 'f', parameters: { b: 2 } }, 'raw', keys)).toStrictEqual({
      ok: true,
      name: 'f',
      arguments: { b: 2 },
      raw: 'raw',
    });
    expect(jsonCall({ name: 'f', parameters: 1 }, 'raw', keys)).toMatchObject({
      message: `"parameters" of the call to 'f' must be a JSON object`,
    });
    expect(jsonCall({ name: 'f' }, 'raw', keys)).toStrictEqual({ ok: true, name: 'f', arguments: {}, raw: 'raw' });
    expect(jsonCall({ name: 'f', parameters: {}, arguments: {} }, 'raw', keys)).toStrictEqual({
      ok: false,
      kind: 'bad_call',
      name: 'f',
      raw: 'raw',
      message: `the call to 'f' has both "parameters" and "arguments"; write one`,
    });
    expect(jsonCall({ parameters: {} }, '{"parameters": {}}', keys)).toStrictEqual({
      ok: false,
      kind: 'bad_call',
      raw: '{"parameters": {}}',
      message: 'a tool call must be a JSON object with a string "name" and an object "parameters" or "arguments"',
    });
  });
});
