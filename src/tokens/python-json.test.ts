import { describe, expect, test } from 'vitest';
import { pythonJson } from './python-json.js';

describe('pythonJson', () => {
  test('returns JSON with the separators of Python json.dumps, nested', () => {
    expect(pythonJson({ name: 'add', arguments: { a: 1, b: [2.5, true, null], c: {}, d: [] } })).toBe(
      '{"name": "add", "arguments": {"a": 1, "b": [2.5, true, null], "c": {}, "d": []}}',
    );
    expect(pythonJson('a "quoted"\nline')).toBe('"a \\"quoted\\"\\nline"');
  });

  test('returns null for null, and drops undefined as JSON.stringify does (a key left out, null in a list)', () => {
    expect(pythonJson(null)).toBe('null');
    expect(pythonJson({ a: null })).toBe('{"a": null}');
    expect(pythonJson({ a: 1, skipped: undefined, b: 2 })).toBe('{"a": 1, "b": 2}');
    expect(pythonJson([undefined, 1])).toBe('[null, 1]');
    expect(pythonJson(undefined)).toBe('null');
  });
});
