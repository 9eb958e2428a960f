import { execFileSync } from 'node:child_process';
import { describe, expect, test } from 'vitest';
import { pyDumps, pyFloatRepr, pyRound2 } from './py-json.js';

const samples = [
  0.125,
  0.375,
  2.675,
  1.005,
  -0.125,
  100,
  1e16,
  1.5e-5,
  0.0001,
  123456789.123,
  54.04 + 12.1,
  // biome-ignore lint/suspicious/noApproximativeNumericConstant: a number as a user writes it, not pi
  3.14159,
  -2.5,
  1e22,
  7,
];

describe('pyFloatRepr', () => {
  test('returns what Python prints for repr(float(x)) and repr(round(x, 2))', () => {
    const python = execFileSync(
      '/usr/bin/python3',
      [
        '-c',
        `import json,sys\nfor x in json.loads(sys.argv[1]): print(repr(float(x)), repr(round(float(x), 2)))`,
        JSON.stringify(samples),
      ],
      {
        encoding: 'utf8',
      },
    );
    const ours = samples.map((x) => `${pyFloatRepr(x)} ${pyFloatRepr(pyRound2(x))}`).join('\n');
    expect(ours).toBe(python.trim());
  });
});

describe('pyDumps', () => {
  test('returns json.dumps text with typed floats, escaped non-ASCII and sorted keys', () => {
    const value = { b: 100, a: { amount: 100, name: 'Zoë\u007f' }, c: [1.5, true, null] };
    const isFloat = (key: string): boolean => key === 'amount';
    expect(pyDumps(value, { isFloat })).toBe(
      '{"b": 100, "a": {"amount": 100.0, "name": "Zo\\u00eb\\u007f"}, "c": [1.5, true, null]}',
    );
    expect(pyDumps(value, { isFloat, sortKeys: true })).toBe(
      '{"a": {"amount": 100.0, "name": "Zo\\u00eb\\u007f"}, "b": 100, "c": [1.5, true, null]}',
    );
  });
});
