import { describe, expect, test } from 'vitest';
import { SAMPLE_SOLUTIONS } from '../__fixtures__/deepcoder-solutions.js';
import type { CodeTaskData } from '../datasets/code-tests.js';
import { deepcoderDataset } from '../datasets/deepcoder.js';
import type { Task } from '../datasets/types.js';
import { SandboxPool } from '../tools/sandbox/index.js';
import { dataDir } from '../util/paths.js';
import { CodeTestsOptionsSchema, codeTestsReward, lastPythonBlock, scoreCode } from './code-tests.js';
import type { EpisodeOutcome } from './types.js';

const pool = new SandboxPool({ size: 2 });
const tasks = new Map(
  (await deepcoderDataset.load('test', { recipeDir: '.', dataDir: dataDir(), seed: 0, options: {} })).map((t) => [
    t.id,
    t,
  ]),
);
const defaults = CodeTestsOptionsSchema.parse({ timeout_per_test_s: 1 });

function outcome(task: Task, finalText: string): EpisodeOutcome {
  const env = { episodeId: 'e', task, state: new Map(), signal: new AbortController().signal };
  return { task, finalText, messages: [], toolCalls: [], finishReason: 'endTurn', env };
}

const answer = (code: string): string => `Here is my solution.\n\n\`\`\`python\n${code}\n\`\`\`\n`;

describe('code_tests reward', () => {
  test.each(SAMPLE_SOLUTIONS.map((s) => [s.id, s] as const))(
    'returns 1 for the correct solution of %s',
    async (id, solution) => {
      const task = tasks.get(id)!;
      const total = (task.data as unknown as CodeTaskData).tests.length;
      expect(await scoreCode(outcome(task, answer(solution.correct)), defaults, pool)).toStrictEqual({
        score: 1,
        parts: { passed: total, total },
        info: { failures: [] },
      });
    },
  );

  test.each(SAMPLE_SOLUTIONS.map((s) => [s.id, s] as const))(
    'returns 0 with the failure kind for the wrong solution of %s',
    async (id, solution) => {
      const task = tasks.get(id)!;
      const result = await scoreCode(outcome(task, answer(solution.wrong)), defaults, pool);
      expect(result.score).toBe(0);
      const failures = result.info.failures;
      expect(failures[0].kind).toBe(solution.wrongKind);
      expect(failures.slice(1).every((f) => f.kind === 'not_run')).toBe(true);
    },
  );

  test('returns the failure details a person can act on: expected vs got, the traceback tail, the missing method', async () => {
    const byId = (id: string) => SAMPLE_SOLUTIONS.find((s) => s.id === id)!;
    const wrong = await scoreCode(
      outcome(tasks.get('lcbv5_test_0')!, answer(byId('lcbv5_test_0').wrong)),
      defaults,
      pool,
    );
    expect(wrong.info.failures[0]).toStrictEqual({
      test: 0,
      kind: 'wrong_answer',
      detail: 'expected "3\\n", got "2\\n"',
    });
    const crash = await scoreCode(
      outcome(tasks.get('lcbv5_test_108')!, answer(byId('lcbv5_test_108').wrong)),
      defaults,
      pool,
    );
    expect(crash.info.failures[0].detail?.split('\n').at(-1)).toBe('ZeroDivisionError: division by zero');
    const missing = await scoreCode(
      outcome(tasks.get('lcbv5_test_243')!, answer(byId('lcbv5_test_243').wrong)),
      defaults,
      pool,
    );
    expect(missing.info.failures[0].detail).toBe(
      "AtkHarnessError: the code defines no function or Solution method named 'smallestNumber'",
    );
  });

  test('returns the fraction passed with partial, running every test', async () => {
    const task = tasks.get('lcbv5_test_249')!;
    const code = 'class Solution:\n    def smallestNumber(self, n):\n        return 7 if n == 5 else 0\n';
    const result = await scoreCode(outcome(task, answer(code)), { ...defaults, partial: true }, pool);
    expect([result.score, result.parts]).toStrictEqual([1 / 3, { passed: 1, total: 3 }]);
    expect(result.info.failures.map((f) => f.kind)).toStrictEqual(['wrong_answer', 'wrong_answer']);
  });

  test('returns 0 with a reason when the answer has no python block', async () => {
    const task = tasks.get('lcbv5_test_0')!;
    expect(await scoreCode(outcome(task, 'print(1) is my answer\n```text\n3\n```'), defaults, pool)).toStrictEqual({
      score: 0,
      parts: { passed: 0, total: 2 },
      info: { reason: 'no fenced python code block in the final answer', failures: [] },
    });
  });

  test('returns not_run for tests past the total time limit', async () => {
    const task = tasks.get('lcbv5_test_249')!;
    const slow =
      'import time\nclass Solution:\n    def smallestNumber(self, n):\n        time.sleep(0.8)\n        return 2 ** n.bit_length() - 1\n';
    const result = await scoreCode(
      outcome(task, answer(slow)),
      { ...defaults, partial: true, total_timeout_s: 1.2 },
      pool,
    );
    const kinds = result.info.failures.map((f) => f.kind);
    expect(kinds.at(-1)).toBe('not_run');
  });

  test('rejects unknown options as a located config error', async () => {
    await expect(
      codeTestsReward.create({ partial: true, timeout: 3 }, { recipeDir: '.', warn: () => undefined }),
    ).rejects.toThrow(/reward\.code_tests\.options/);
  });
});

describe('lastPythonBlock', () => {
  test('returns the last python or untagged block, skipping other languages', () => {
    expect(lastPythonBlock('```python\na = 1\n```\ntext\n```py\nb = 2\n```\n```text\nout\n```')).toBe('b = 2\n');
    expect(lastPythonBlock('```\nc = 3\n```')).toBe('c = 3\n');
    expect(lastPythonBlock('no code')).toBe(undefined);
  });
});
