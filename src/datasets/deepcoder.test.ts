import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { describe, expect, test } from 'vitest';
import { fullOrSlice } from '../__fixtures__/test-data.js';
import { dataDir } from '../util/paths.js';
import { LCB_SYSTEM_MESSAGE_GENERIC } from './code-prompt.js';
import type { CodeTaskData } from './code-tests.js';
import { deepcoderDataset } from './deepcoder.js';
import type { DatasetContext } from './types.js';

const ctx = (over: Partial<DatasetContext> = {}): DatasetContext => ({
  recipeDir: '.',
  dataDir: dataDir(),
  seed: 0,
  options: {},
  ...over,
});

describe('deepcoderDataset', () => {
  test('returns all 737 sample problems of the test split with 1,729 tests (24 with 59 in the test/data slice)', async () => {
    const tasks = await deepcoderDataset.load('test', ctx());
    expect(tasks.length).toBe(fullOrSlice(737, 24));
    const data = tasks.map((t) => t.data as unknown as CodeTaskData);
    expect(data.reduce((n, d) => n + d.tests.length, 0)).toBe(fullOrSlice(1729, 59));
    expect(new Set(tasks.map((t) => t.id)).size).toBe(tasks.length);
    const bySource = Object.fromEntries(
      ['codeforces', 'lcbv5', 'code_contests'].map((s) => [s, data.filter((d) => d.source === s).length]),
    );
    expect(bySource).toStrictEqual(
      fullOrSlice({ codeforces: 408, lcbv5: 279, code_contests: 50 }, { codeforces: 6, lcbv5: 15, code_contests: 3 }),
    );
    expect(data.filter((d) => d.fn_name).length).toBe(fullOrSlice(104, 8));
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
      starter_code:
        'class Solution:\n    def shortestDistanceAfterQueries(self, n: int, queries: List[List[int]]) -> List[int]:\n        ',
      public_test_count: 2,
    });
    expect(task?.prompt.startsWith(`${LCB_SYSTEM_MESSAGE_GENERIC}\n\nYou are given an integer n`)).toBe(true);
    expect(task?.prompt).toContain('### Format: You will use the following starter code');
    expect(
      task?.prompt.endsWith(
        '```python\nclass Solution:\n    def shortestDistanceAfterQueries(self, n: int, queries: List[List[int]]) -> List[int]:\n        \n```\n\n### Answer: (use the provided format with backticks)\n\n',
      ),
    ).toBe(true);
  });

  test('returns a stdin problem with the stdin template prompt', async () => {
    const [task] = await deepcoderDataset.load('test', ctx({ options: { subsets: ['codeforces'] } }));
    expect(task.id).toBe('codeforces_test_0');
    expect(
      task.prompt.endsWith(
        '```python\n# YOUR CODE HERE\n```\n\n### Answer: (use the provided format with backticks)\n\n',
      ),
    ).toBe(true);
    expect((task.data as unknown as CodeTaskData).tests[0].kind).toBe('stdin');
  });

  test('returns fetched records from a directory of <subset>_<split>.jsonl files', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atk-deepcoder-'));
    const record = {
      id: 'taco_train_0',
      source: 'taco',
      split: 'train',
      problem: 'Add.',
      starter_code: '',
      fn_name: 'add',
      tests: [{ input: '1\n2', output: '[3]', kind: 'functional', accept_unwrapped: true }],
    };
    writeFileSync(join(dir, 'taco_train.jsonl'), `${JSON.stringify(record)}\n`);
    writeFileSync(join(dir, 'taco_test.jsonl'), '');
    const tasks = await deepcoderDataset.load('train', ctx({ path: dir }));
    expect(tasks.map((t) => t.data)).toStrictEqual([{ tests: record.tests, source: 'taco', fn_name: 'add' }]);
  });

  test("returns LiveCodeBench's own rows, private tests decoded after the public ones, as the requested split", async () => {
    // LCB code_generation_lite rows made from the shared lcbv5 problems: the first test public,
    // the others private as base64(zlib(pickle(json))) pickled by CPython itself.
    const lcb = JSON.parse(
      readFileSync(
        join(dataDir(), 'deepcoder', 'raw', 'rllm_test_code_livecodebench_v5_2408-2502_public.json'),
        'utf8',
      ),
    ) as { problem: string; starter_code: string; tests: unknown[] }[];
    const pickle = (text: string): string =>
      deflateSync(
        execFileSync(
          '/usr/bin/python3',
          ['-c', 'import pickle, sys; sys.stdout.buffer.write(pickle.dumps(sys.stdin.read(), protocol=4))'],
          { input: text },
        ),
      ).toString('base64');
    const picked = [0, 1, 2, 3, 4, 5].filter((i) => lcb[i].tests.length > 1).slice(0, 3);
    const rows = picked.map((i) => ({
      question_title: `problem ${i}`,
      question_content: lcb[i].problem,
      platform: 'atcoder',
      question_id: `q${i}`,
      starter_code: lcb[i].starter_code,
      public_test_cases: JSON.stringify(lcb[i].tests.slice(0, 1)),
      private_test_cases: pickle(JSON.stringify(lcb[i].tests.slice(1))),
      metadata: '{}',
    }));
    const file = join(mkdtempSync(join(tmpdir(), 'atk-lcb-')), 'test5.jsonl');
    writeFileSync(file, rows.map((r) => `${JSON.stringify(r)}\n`).join(''));
    const tasks = await deepcoderDataset.load('eval', ctx({ path: file }));
    const sample = new Map(
      (await deepcoderDataset.load('test', ctx({ options: { subsets: ['lcbv5'] } }))).map((t) => [t.id, t]),
    );
    expect(picked.length).toBe(3);
    expect(tasks.map((t) => t.id)).toStrictEqual(picked.map((i) => `livecodebench_q${i}`));
    tasks.forEach((task, k) => {
      const expected = sample.get(`lcbv5_test_${picked[k]}`)!;
      expect(task.prompt).toBe(expected.prompt);
      expect(task.data).toStrictEqual({ ...expected.data, source: 'livecodebench', public_test_count: 1 });
    });

    writeFileSync(
      file,
      `${JSON.stringify({ ...rows[0], private_test_cases: deflateSync(Buffer.from("cos\nsystem\n(S'true'\ntR.")).toString('base64') })}\n`,
    );
    await expect(deepcoderDataset.load('eval', ctx({ path: file }))).rejects.toThrow(
      `${file}:1: pickle: refused opcode 0x63 ("c") at offset 0`,
    );
  });

  test('rejects a split the sample does not have, with a hint to fetch', async () => {
    await expect(deepcoderDataset.load('train', ctx())).rejects.toThrow(/no problems for split 'train'/);
  });

  test('rejects a malformed line naming file and line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atk-deepcoder-'));
    const file = join(dir, 'bad.jsonl');
    writeFileSync(file, '{"id": "x", "split": "test", "problem": "p", "tests": [{"input": "1"}]}\n');
    await expect(deepcoderDataset.load('test', ctx({ path: file }))).rejects.toThrow(
      `${file}:1: code test 0 has no input/output`,
    );
  });

  test('rejects unknown options', async () => {
    await expect(deepcoderDataset.load('test', ctx({ options: { subset: 'lcbv5' } }))).rejects.toThrow(
      /dataset.options/,
    );
  });
});
