import type { CodeTest } from '../../datasets/code-tests.js';
import { FUNCTIONAL_HARNESS } from './harness.js';
import type { SandboxPool } from './pool.js';
import type { SandboxLimits, SandboxResult } from './types.js';

/** How one test went. `not_run`: skipped after an earlier failure or past the total time limit. */
export type TestVerdict =
  | 'passed'
  | 'wrong_answer'
  | 'runtime_error'
  | 'timeout'
  | 'memory'
  | 'output_limit'
  | 'file_limit'
  | 'killed'
  | 'not_run';

export interface TestOutcome {
  /** Position of the test in the list given. */
  readonly index: number;
  readonly verdict: TestVerdict;
  /** What a person or a model needs to fix it: expected vs got, the last stderr lines, the limit hit. */
  readonly detail?: string;
  readonly wallMs: number;
}

export interface TestRunSummary {
  readonly passed: number;
  readonly total: number;
  readonly outcomes: TestOutcome[];
}

export interface TestRunOptions {
  readonly pool: SandboxPool;
  /** Function or `class Solution` method functional tests call. */
  readonly fnName?: string;
  /** Limits for each test's program. */
  readonly limits?: Partial<SandboxLimits>;
  /** Wall-clock budget for all tests together; tests that cannot start in it are `not_run`. */
  readonly totalMs?: number;
  /** Stop at the first failing test (the rest are `not_run`); default true. */
  readonly stopOnFirstFailure?: boolean;
  /** Numbers match when |a - b| <= tolerance * max(1, |b|); 0 = numerically equal ("1.0" matches "1"). */
  readonly floatTolerance?: number;
  readonly signal?: AbortSignal;
}

/**
 * Runs `code` against tests one at a time in the sandbox and compares outputs on the host:
 * stdin tests line by line after trimming, functional tests as JSON values.
 */
export async function runCodeTests(
  code: string,
  tests: readonly CodeTest[],
  options: TestRunOptions,
): Promise<TestRunSummary> {
  const deadline = options.totalMs === undefined ? Infinity : Date.now() + options.totalMs;
  const stopOnFailure = options.stopOnFirstFailure ?? true;
  const tolerance = options.floatTolerance ?? 0;
  const outcomes: TestOutcome[] = [];
  let failed = false;
  for (const [index, test] of tests.entries()) {
    const remaining = deadline - Date.now();
    if ((failed && stopOnFailure) || remaining <= 0 || options.signal?.aborted) {
      outcomes.push({
        index,
        verdict: 'not_run',
        detail: failed && stopOnFailure ? 'an earlier test failed' : 'total time limit reached',
        wallMs: 0,
      });
      continue;
    }
    const wallMs = Math.min(options.limits?.wallMs ?? Infinity, remaining);
    const limits = Number.isFinite(wallMs) ? { ...options.limits, wallMs } : options.limits;
    const outcome = await runOne(code, test, index, { ...options, limits, floatTolerance: tolerance });
    outcomes.push(outcome);
    if (outcome.verdict !== 'passed') failed = true;
  }
  return { passed: outcomes.filter((o) => o.verdict === 'passed').length, total: tests.length, outcomes };
}

async function runOne(code: string, test: CodeTest, index: number, options: TestRunOptions): Promise<TestOutcome> {
  const functional = test.kind === 'functional';
  if (functional && !options.fnName)
    return { index, verdict: 'runtime_error', detail: 'functional test without a function name', wallMs: 0 };
  const result = functional
    ? await options.pool.run({
        code: FUNCTIONAL_HARNESS,
        files: { 'solution.py': code },
        stdin: JSON.stringify({ fn_name: options.fnName, input: test.input }),
        limits: options.limits,
        signal: options.signal,
      })
    : await options.pool.run({ code, stdin: test.input, limits: options.limits, signal: options.signal });
  const base = { index, wallMs: result.wallMs };
  if (result.status !== 'ok') return { ...base, verdict: result.status, detail: failureDetail(result) };
  const tolerance = options.floatTolerance ?? 0;
  const match = functional
    ? functionalMatch(result.stdout, test, tolerance)
    : stdoutMatches(result.stdout, test.output, tolerance);
  if (match) return { ...base, verdict: 'passed' };
  return { ...base, verdict: 'wrong_answer', detail: `expected ${clip(test.output)}, got ${clip(result.stdout)}` };
}

function failureDetail(result: SandboxResult): string {
  const tail = result.stderr.trimEnd().split('\n').slice(-5).join('\n');
  switch (result.status) {
    case 'timeout':
      return `time limit exceeded (${result.signal === 'SIGXCPU' ? 'CPU' : 'wall clock'})`;
    case 'memory':
      return `memory limit exceeded${tail ? `: ${tail.split('\n').at(-1)}` : ''}`;
    case 'output_limit':
      return 'output limit exceeded';
    case 'file_limit':
      return 'file size limit exceeded';
    case 'killed':
      return 'killed';
    default:
      return tail || `exit code ${result.exitCode ?? result.signal}`;
  }
}

/** stdout vs expected: same number of lines after trimming; each line equal, or token by token with numbers compared numerically. */
export function stdoutMatches(actual: string, expected: string, tolerance: number): boolean {
  const a = actual
    .trim()
    .split('\n')
    .map((l) => l.trim());
  const e = expected
    .trim()
    .split('\n')
    .map((l) => l.trim());
  if (a.length !== e.length) return false;
  return a.every((line, i) => line === e[i] || tokensMatch(line, e[i], tolerance));
}

function tokensMatch(a: string, e: string, tolerance: number): boolean {
  const at = a.split(/\s+/);
  const et = e.split(/\s+/);
  return at.length === et.length && at.every((t, i) => t === et[i] || numbersMatch(t, et[i], tolerance));
}

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

function numbersMatch(a: string, e: string, tolerance: number): boolean {
  if (!NUMBER.test(a) || !NUMBER.test(e)) return false;
  const x = Number(a);
  const y = Number(e);
  return x === y || Math.abs(x - y) <= tolerance * Math.max(1, Math.abs(y));
}

function functionalMatch(stdout: string, test: CodeTest, tolerance: number): boolean {
  let actual: unknown;
  let expected: unknown;
  try {
    actual = JSON.parse(stdout);
    expected = JSON.parse(test.output);
  } catch {
    return stdout.trim() === test.output.trim();
  }
  if (jsonEqual(actual, expected, tolerance)) return true;
  return (
    test.accept_unwrapped === true &&
    Array.isArray(expected) &&
    expected.length === 1 &&
    jsonEqual(actual, expected[0], tolerance)
  );
}

/** Deep equality of JSON values; numbers within the tolerance. */
export function jsonEqual(a: unknown, b: unknown, tolerance: number): boolean {
  if (typeof a === 'number' && typeof b === 'number')
    return a === b || Math.abs(a - b) <= tolerance * Math.max(1, Math.abs(b));
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i], tolerance))
    );
  }
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a).sort();
    const kb = Object.keys(b).sort();
    return (
      ka.length === kb.length &&
      ka.every(
        (k, i) =>
          k === kb[i] && jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], tolerance),
      )
    );
  }
  return a === b;
}

function clip(text: string, max = 200): string {
  const json = JSON.stringify(text.length > max ? `${text.slice(0, max)}...` : text);
  return json;
}
