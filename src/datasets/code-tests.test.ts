import { execFileSync } from 'node:child_process';
import { deflateSync } from 'node:zlib';
import { describe, expect, test } from 'vitest';
import { recordFromDeepCoderRow, recordFromLcbRow } from './code-records.js';
import { fnNameFromStarter, normalizeCodeTests } from './code-tests.js';

describe('normalizeCodeTests', () => {
  test('returns lcbv5/codeforces tests from JSON text with testtype', () => {
    const raw = JSON.stringify([
      { input: '1\n', output: '2\n', testtype: 'stdin' },
      { input: '3\n', output: '4\n', testtype: 'stdin' },
    ]);
    expect(normalizeCodeTests(raw)).toStrictEqual({
      tests: [
        { input: '1\n', output: '2\n', kind: 'stdin' },
        { input: '3\n', output: '4\n', kind: 'stdin' },
      ],
    });
  });

  test('returns LCB functional tests with the name from metadata, without the unwrap rule', () => {
    const raw = [{ input: '[1,2]\n3', output: '[0,1]', testtype: 'functional' }];
    expect(normalizeCodeTests(raw, 'twoSum')).toStrictEqual({
      tests: [{ input: '[1,2]\n3', output: '[0,1]', kind: 'functional' }],
      fnName: 'twoSum',
    });
  });

  test('returns primeintellect stdin_stdout tests, functional when they carry fn_name', () => {
    expect(normalizeCodeTests([{ type: 'stdin_stdout', input: 'a\n', output: 'b\n' }])).toStrictEqual({
      tests: [{ input: 'a\n', output: 'b\n', kind: 'stdin' }],
    });
    const fn = [{ type: 'stdin_stdout', input: [[1, 2], 3], output: [[0, 1]], fn_name: 'two_sum' }];
    expect(normalizeCodeTests(fn)).toStrictEqual({
      tests: [{ input: '[1,2]\n3', output: '[[0,1]]', kind: 'functional', accept_unwrapped: true }],
      fnName: 'two_sum',
    });
  });

  test('returns taco {inputs, outputs} tests, stdin or call-based', () => {
    expect(normalizeCodeTests('{"inputs": ["1 2\\n"], "outputs": ["3\\n"]}')).toStrictEqual({
      tests: [{ input: '1 2\n', output: '3\n', kind: 'stdin' }],
    });
    expect(normalizeCodeTests({ inputs: [['ab', 2]], outputs: [['abab']], fn_name: 'repeat' })).toStrictEqual({
      tests: [{ input: '"ab"\n2', output: '["abab"]', kind: 'functional', accept_unwrapped: true }],
      fnName: 'repeat',
    });
  });

  test('rejects an unknown shape and functional tests without a name', () => {
    expect(() => normalizeCodeTests({ cases: [] })).toThrow(/unknown code test shape/);
    expect(() => normalizeCodeTests([{ input: '1', output: '2', testtype: 'functional' }])).toThrow(
      /without a function name/,
    );
  });
});

describe('fnNameFromStarter', () => {
  test('returns the Solution method name, else the first function name', () => {
    expect(fnNameFromStarter('class Solution:\n    def maxScore(self, a: List[int]) -> int:\n        ')).toBe(
      'maxScore',
    );
    expect(fnNameFromStarter('def solve(n):\n    pass')).toBe('solve');
    expect(fnNameFromStarter('')).toBe(undefined);
  });
});

describe('recordFromDeepCoderRow', () => {
  test('returns a record from an lcbv5 parquet row with metadata.func_name', () => {
    const row = {
      problem: 'Return the sum.',
      starter_code: 'class Solution:\n    def total(self, nums: List[int]) -> int:\n        ',
      tests: JSON.stringify([{ input: '[1, 2]', output: '3', testtype: 'functional' }]),
      metadata: '{"func_name": "total"}',
    };
    expect(recordFromDeepCoderRow(row, 'lcbv5', 'train', 7)).toStrictEqual({
      id: 'lcbv5_train_7',
      source: 'lcbv5',
      split: 'train',
      problem: 'Return the sum.',
      starter_code: row.starter_code,
      fn_name: 'total',
      tests: [{ input: '[1, 2]', output: '3', kind: 'functional' }],
    });
  });
});

describe('recordFromLcbRow', () => {
  test('returns public tests first and decoded private tests after them', () => {
    const privateTests = JSON.stringify([{ input: '5\n', output: '25\n', testtype: 'stdin' }]);
    const pickled = execFileSync(
      '/usr/bin/python3',
      ['-c', 'import pickle, sys; sys.stdout.buffer.write(pickle.dumps(sys.stdin.read()))'],
      { input: privateTests },
    );
    const row = {
      question_title: 'Square',
      question_content: 'Print n squared.',
      platform: 'atcoder',
      question_id: 'abc001_a',
      starter_code: '',
      public_test_cases: JSON.stringify([{ input: '2\n', output: '4\n', testtype: 'stdin' }]),
      private_test_cases: deflateSync(pickled).toString('base64'),
      metadata: '{}',
    };
    expect(recordFromLcbRow(row, 'test', 0)).toStrictEqual({
      id: 'livecodebench_abc001_a',
      source: 'livecodebench',
      split: 'test',
      problem: 'Print n squared.',
      starter_code: '',
      fn_name: null,
      tests: [
        { input: '2\n', output: '4\n', kind: 'stdin' },
        { input: '5\n', output: '25\n', kind: 'stdin' },
      ],
      public_test_count: 1,
    });
  });
});
