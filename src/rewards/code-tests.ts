import { z } from 'zod';
import type { CodeTaskData, CodeTest } from '../datasets/code-tests.js';
import { parseComponentOptions } from '../util/component-options.js';
import { runCodeTests, sandboxPoolSizeOption, sharedSandboxPool, type TestOutcome } from '../tools/sandbox/index.js';
import type { EpisodeOutcome, RewardDefinition, RewardFn, RewardRunContext } from './types.js';

export const CodeTestsOptionsSchema = z.strictObject({
  partial: z
    .boolean()
    .default(false)
    .describe('Score the fraction of tests passed instead of all-or-nothing (and run every test).'),
  timeout_per_test_s: z
    .number()
    .positive()
    .default(6)
    .describe('CPU seconds per test (rLLM uses 6); the wall limit is twice that plus one second.'),
  total_timeout_s: z
    .number()
    .positive()
    .optional()
    .describe('Wall seconds for all tests of one answer; default (timeout_per_test_s + 1) * tests + 5, as rLLM.'),
  memory_mb: z.number().int().positive().default(1024).describe('Address-space limit per test program.'),
  max_tests: z
    .number()
    .int()
    .positive()
    .optional()
    .describe('Run only the N tests with the longest inputs (rLLM used 15 for taco/primeintellect).'),
  float_tolerance: z
    .number()
    .nonnegative()
    .default(0)
    .describe('Relative tolerance for numbers in outputs; 0 = numerically equal.'),
  sandbox_pool_size: sandboxPoolSizeOption,
});
export type CodeTestsOptions = z.infer<typeof CodeTestsOptionsSchema>;

/** A failed test as the reward records it. */
export interface CodeTestFailure {
  readonly test: number;
  readonly kind: TestOutcome['verdict'];
  readonly detail?: string;
}

/** What `code_tests` returns: a `RewardResult` with passed/total parts and the failures. */
export interface CodeTestsResult {
  readonly score: number;
  readonly parts: { readonly passed: number; readonly total: number };
  readonly info: { readonly failures: CodeTestFailure[]; readonly reason?: string };
}

/**
 * `code_tests`: runs the last fenced Python block of the final answer against the task's tests
 * in the sandbox. Score 1 when all pass (or the fraction passed with `partial`), 0 without a
 * code block. `parts` holds passed/total; `info.failures` says which tests failed and why.
 * @throws ConfigError on unknown or invalid options.
 */
export const codeTestsReward: RewardDefinition = {
  name: 'code_tests',
  options: CodeTestsOptionsSchema,
  async create(options: Readonly<Record<string, unknown>>, ctx: RewardRunContext): Promise<RewardFn> {
    const parsed = parseComponentOptions(CodeTestsOptionsSchema, options, 'reward.code_tests.options');
    const pool = sharedSandboxPool({ size: parsed.sandbox_pool_size });
    pool.onWarning((message) => ctx.warn(message));
    return (outcome) => scoreCode(outcome, parsed, pool);
  },
};

/** Scores one episode; exported for tests and for `atk eval`-style direct use. */
export async function scoreCode(
  outcome: EpisodeOutcome,
  options: CodeTestsOptions,
  pool = sharedSandboxPool(),
): Promise<CodeTestsResult> {
  const data = outcome.task.data as Partial<CodeTaskData>;
  const tests = selectTests(Array.isArray(data.tests) ? data.tests : [], options.max_tests);
  const code = lastPythonBlock(outcome.finalText);
  if (code === undefined)
    return {
      score: 0,
      parts: { passed: 0, total: tests.length },
      info: { reason: 'no fenced python code block in the final answer', failures: [] },
    };
  if (tests.length === 0)
    return { score: 0, parts: { passed: 0, total: 0 }, info: { reason: 'the task has no tests', failures: [] } };
  const perTestMs = options.timeout_per_test_s * 1000;
  const summary = await runCodeTests(code, tests, {
    pool,
    fnName: data.fn_name,
    limits: { cpuMs: perTestMs, wallMs: 2 * perTestMs + 1000, memoryMb: options.memory_mb },
    totalMs: (options.total_timeout_s ?? (options.timeout_per_test_s + 1) * tests.length + 5) * 1000,
    stopOnFirstFailure: !options.partial,
    floatTolerance: options.float_tolerance,
    signal: outcome.env.signal,
  });
  const failures: CodeTestFailure[] = summary.outcomes
    .filter((o) => o.verdict !== 'passed')
    .map((o) =>
      o.detail === undefined
        ? { test: o.index, kind: o.verdict }
        : { test: o.index, kind: o.verdict, detail: o.detail },
    );
  const score = options.partial ? summary.passed / summary.total : summary.passed === summary.total ? 1 : 0;
  return { score, parts: { passed: summary.passed, total: summary.total }, info: { failures } };
}

/**
 * The last fenced code block tagged python/py/python3 or untagged (rLLM takes the last block of
 * any tag; skipping other languages keeps a trailing ```text example from hiding the code).
 */
export function lastPythonBlock(text: string): string | undefined {
  let last: string | undefined;
  for (const match of text.matchAll(/```([\w+-]*)[^\S\n]*\n([\s\S]*?)```/g)) {
    if (['', 'python', 'py', 'python3'].includes(match[1].toLowerCase())) last = match[2];
  }
  return last;
}

/** All tests, or the `max` with the longest inputs in their original order (rLLM's rule for huge suites). */
function selectTests(tests: readonly CodeTest[], max: number | undefined): CodeTest[] {
  if (max === undefined || tests.length <= max) return [...tests];
  const keep = new Set(
    tests
      .map((t, i) => ({ i, length: t.input.length }))
      .sort((a, b) => b.length - a.length || a.i - b.i)
      .slice(0, max)
      .map((t) => t.i),
  );
  return tests.filter((_, i) => keep.has(i));
}
