import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { dataDir } from '../util/paths.js';
import { LCB_SYSTEM_MESSAGE_GENERIC } from './code-prompt.js';
import type { CodeTaskData } from './code-tests.js';
import { deepcoderDataset } from './deepcoder.js';
import type { DatasetContext } from './types.js';

const ctx = (over: Partial<DatasetContext> = {}): DatasetContext => ({ recipeDir: '.', dataDir: dataDir(), seed: 0, options: {}, ...over });

describe('deepcoderDataset', () => {
  test('returns all 737 sample problems of the test split with 1,729 tests', async () => {
    const tasks = await deepcoderDataset.load('test', ctx());
    expect(tasks.length).toBe(737);
    const data = tasks.map((t) => t.data as unknown as CodeTaskData);
    expect(data.reduce((n, d) => n + d.tests.length, 0)).toBe(1729);
    expect(new Set(tasks.map((t) => t.id)).size).toBe(737);
    const bySource = Object.fromEntries(['codeforces', 'lcbv5', 'code_contests'].map((s) => [s, data.filter((d) => d.source === s).length]));
    expect(bySource).toStrictEqual({ codeforces: 408, lcbv5: 279, code_contests: 50 });
    expect(data.filter((d) => d.fn_name).length).toBe(104);
    expect(data.every((d) => d.public_test_count === d.tests.length)).toBe(true);
  });

  test('returns a functional LeetCode problem with its starter code in the LCB prompt', async () => {
    const tasks = await deepcoderDataset.load('test', ctx({ options: { subsets: ['lcbv5'] } }));
    const task = tasks.find((t) => t.id === 'lcbv5_test_5');
    expect(task?.data).toStrictEqual({
      tests: [
        { input: '5\n[[2, 4], [0, 2], [0, 4]]', output: '[3, 2, 1]', kind: 'functional' },
        { input: '4\n[[0, 3], [0, 2]]', output: '[1, 1]', kind: 'functional' },
      ],
      source: 'lcbv5',
      fn_name: 'shortestDistanceAfterQueries',
      starter_code: 'class Solution:\n    def shortestDistanceAfterQueries(self, n: int, queries: List[List[int]]) -> List[int]:\n        ',
      public_test_count: 2,
    });
    expect(task?.prompt.startsWith(`${LCB_SYSTEM_MESSAGE_GENERIC}\n\nYou are given an integer n`)).toBe(true);
    expect(task?.prompt).toContain('### Format: You will use the following starter code');
    expect(task?.prompt.endsWith('```python\nclass Solution:\n    def shortestDistanceAfterQueries(self, n: int, queries: List[List[int]]) -> List[int]:\n        \n```\n\n### Answer: (use the provided format with backticks)\n\n')).toBe(true);
  });

  test('returns a stdin problem with the stdin template prompt', async () => {
    const [task] = await deepcoderDataset.load('test', ctx({ options: { subsets: ['codeforces'] } }));
    expect(task.id).toBe('codeforces_test_0');
    expect(task.prompt.endsWith('```python\n# YOUR CODE HERE\n```\n\n### Answer: (use the provided format with backticks)\n\n')).toBe(true);
    expect((task.data as unknown as CodeTaskData).tests[0].kind).toBe('stdin');
  });

  test('returns fetched records from a directory of <subset>_<split>.jsonl files', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atk-deepcoder-'));
    const record = { id: 'taco_train_0', source: 'taco', split: 'train', problem: 'Add.', starter_code: '', fn_name: 'add', tests: [{ input: '1\n2', output: '[3]', kind: 'functional', accept_unwrapped: true }] };
    writeFileSync(join(dir, 'taco_train.jsonl'), `${JSON.stringify(record)}\n`);
    writeFileSync(join(dir, 'taco_test.jsonl'), '');
    const tasks = await deepcoderDataset.load('train', ctx({ path: dir }));
    expect(tasks.map((t) => t.data)).toStrictEqual([{ tests: record.tests, source: 'taco', fn_name: 'add' }]);
  });

  test('rejects a split the sample does not have, with a hint to fetch', async () => {
    await expect(deepcoderDataset.load('train', ctx())).rejects.toThrow(/no problems for split 'train'/);
  });

  test('rejects a malformed line naming file and line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atk-deepcoder-'));
    const file = join(dir, 'bad.jsonl');
    writeFileSync(file, '{"id": "x", "split": "test", "problem": "p", "tests": [{"input": "1"}]}\n');
    await expect(deepcoderDataset.load('test', ctx({ path: file }))).rejects.toThrow(`${file}:1: code test 0 has no input/output`);
  });

  test('rejects unknown options', async () => {
    await expect(deepcoderDataset.load('test', ctx({ options: { subset: 'lcbv5' } }))).rejects.toThrow(/dataset.options/);
  });
});
