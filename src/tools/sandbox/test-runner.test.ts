import { describe, expect, test } from 'vitest';
import { jsonEqual, runCodeTests, stdoutMatches } from './test-runner.js';
import { SandboxPool } from './pool.js';

describe('stdoutMatches', () => {
  test('returns true for output equal line by line after trimming, numbers compared numerically', () => {
    expect(stdoutMatches('1 2  \n3\n\n', '1 2\n3', 0)).toBe(true);
    expect(stdoutMatches('1.0 2\r\n', '1 2.00\n', 0)).toBe(true);
    expect(stdoutMatches('0.3333334\n', '0.333333', 1e-5)).toBe(true);
  });

  test('returns false for a different line count, token or number', () => {
    expect(stdoutMatches('1\n2', '1 2', 0)).toBe(false);
    expect(stdoutMatches('Yes', 'YES', 0)).toBe(false);
    expect(stdoutMatches('0.34', '0.333333', 1e-5)).toBe(false);
  });
});

describe('jsonEqual', () => {
  test('returns deep equality with numbers within tolerance', () => {
    expect(jsonEqual([1, { a: [2.0000001] }], [1, { a: [2] }], 1e-6)).toBe(true);
    expect(jsonEqual([1, 2], [2, 1], 0)).toBe(false);
    expect(jsonEqual({ a: 1 }, { a: 1, b: 2 }, 0)).toBe(false);
    expect(jsonEqual(true, 1, 0)).toBe(false);
  });
});

describe('runCodeTests', () => {
  const pool = new SandboxPool({ size: 1 });

  test('returns passed for a plain function and accepts the APPS one-element-list convention', async () => {
    const code = 'def repeat(s, n):\n    return s * n\n';
    const tests = [
      { input: '"ab"\n2', output: '["abab"]', kind: 'functional' as const, accept_unwrapped: true },
      { input: '"x"\n3', output: '"xxx"', kind: 'functional' as const },
    ];
    const summary = await runCodeTests(code, tests, { pool, fnName: 'repeat' });
    expect(summary).toMatchObject({ passed: 2, total: 2 });
  });

  test('returns wrong_answer for a tuple-vs-scalar mismatch and keeps solution prints out of the result', async () => {
    const code = 'def pair(a):\n    print("debug")\n    return (a, a)\n';
    const summary = await runCodeTests(
      code,
      [
        { input: '1', output: '[1, 1]', kind: 'functional' },
        { input: '2', output: '2', kind: 'functional' },
      ],
      {
        pool,
        fnName: 'pair',
        stopOnFirstFailure: false,
      },
    );
    expect(summary.outcomes.map((o) => [o.verdict, o.detail])).toStrictEqual([
      ['passed', undefined],
      ['wrong_answer', 'expected "2", got "[2, 2]"'],
    ]);
  });
});
