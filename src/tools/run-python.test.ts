import { describe, expect, test } from 'vitest';
import { SAMPLE_SOLUTIONS } from '../__fixtures__/deepcoder-solutions.js';
import { deepcoderDataset } from '../datasets/deepcoder.js';
import type { Task } from '../datasets/types.js';
import { runStrandsTool } from '../domains/tau2/tools/common.js';
import { dataDir } from '../util/paths.js';
import { runPythonTool, runPythonTools } from './run-python.js';
import { SandboxPool } from './sandbox/index.js';
import type { EpisodeEnv } from './types.js';

const pool = new SandboxPool({ size: 2 });
const config = { timeout_s: 1, memory_mb: 512, max_output_chars: 40 };
const tasks = new Map(
  (
    await deepcoderDataset.load('test', {
      recipeDir: '.',
      dataDir: dataDir(),
      seed: 0,
      options: { subsets: ['lcbv5'] },
    })
  ).map((t) => [t.id, t]),
);
const envFor = (task: Task): EpisodeEnv => ({
  episodeId: 'e0',
  task,
  state: new Map(),
  signal: new AbortController().signal,
});
const solution = (id: string) => SAMPLE_SOLUTIONS.find((s) => s.id === id)!;

describe('run_python tool', () => {
  const env = envFor(tasks.get('lcbv5_test_0')!);

  test('returns status, stdout and stderr of a run with stdin', async () => {
    const result = await runStrandsTool(runPythonTool(env, config, pool), {
      code: 'import sys\nx = sys.stdin.read()\nprint(x.upper())\nprint("note", file=sys.stderr)',
      stdin: 'abc',
    });
    expect(result.status).toBe('success');
    expect(result.output.replace(/\d+\.\d+ s/, 'T s')).toBe(
      'status: ok (exit code 0, T s)\nstdout:\nABC\nstderr:\nnote',
    );
  });

  test('returns the runtime error with its traceback, and cuts long output with a note', async () => {
    const crash = await runStrandsTool(runPythonTool(env, config, pool), {
      code: 'print("x" * 100)\nraise KeyError("k")',
    });
    expect(crash.status).toBe('success');
    const lines = crash.output.split('\n');
    expect(lines[0]).toMatch(/^status: runtime_error \(exit code 1, \d+\.\d+ s\)$/);
    expect(lines.slice(1, 5)).toStrictEqual(['stdout:', 'x'.repeat(40), '... [60 more characters cut]', 'stderr:']);
    expect(lines[5]).toMatch(/^\[\d+ earlier characters cut\] \.\.\.$/);
    expect(lines.at(-1)).toBe("KeyError: 'k'");
  });

  test('returns timeout for a program past its CPU limit', async () => {
    const result = await runStrandsTool(runPythonTool(env, config, pool), { code: 'while True: pass' });
    expect(result.output.split('\n')[0]).toBe('status: timeout (CPU limit of 1 s exceeded)');
  });

  test('returns a pass summary on the public tests of a stdin problem', async () => {
    const result = await runStrandsTool(runPythonTool(env, config, pool), {
      code: solution('lcbv5_test_0').correct,
      tests: 'public',
    });
    expect(result).toStrictEqual({
      status: 'success',
      output: 'public tests: 2 of 2 passed\ntest 1: passed\ntest 2: passed',
    });
  });

  test('returns which public tests failed and why for a functional problem', async () => {
    const fenv = envFor(tasks.get('lcbv5_test_249')!);
    const code = 'class Solution:\n    def smallestNumber(self, n):\n        return 7 if n == 5 else n\n';
    const result = await runStrandsTool(runPythonTool(fenv, config, pool), { code, tests: 'public' });
    expect(result.output).toBe(
      [
        'public tests: 2 of 3 passed',
        'test 1: passed',
        'test 2: wrong_answer: expected "15", got "10"',
        '  input: "10"',
        'test 3: passed',
      ].join('\n'),
    );
  });

  test('returns an error result for stdin together with tests, or a task without tests', async () => {
    const both = await runStrandsTool(runPythonTool(env, config, pool), {
      code: 'print(1)',
      stdin: '1',
      tests: 'public',
    });
    expect(both).toStrictEqual({ status: 'error', output: 'Error: give either stdin or tests: "public", not both' });
    const bare = envFor({ id: 'x', prompt: 'p', data: {} });
    const none = await runStrandsTool(runPythonTool(bare, config, pool), { code: 'print(1)', tests: 'public' });
    expect(none).toStrictEqual({
      status: 'error',
      output: 'Error: this problem has no public tests; run the code with your own stdin instead',
    });
  });

  test('returns tools from the registered definition and rejects unknown options', async () => {
    const make = await runPythonTools.create({ timeout_s: 2 }, { recipeDir: '.', warn: () => undefined });
    expect(make(env).map((t) => t.name)).toStrictEqual(['run_python']);
    await expect(runPythonTools.create({ timeout: 2 }, { recipeDir: '.', warn: () => undefined })).rejects.toThrow(
      /tools\.run_python\.options/,
    );
  });
});
