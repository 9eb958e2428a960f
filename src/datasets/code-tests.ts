import { InputError } from '../errors/index.js';

/** One unit test of a coding problem, in the one shape every code dataset is normalised to. */
export interface CodeTest {
  /** stdin text, or for functional tests one JSON-encoded positional argument per line. */
  readonly input: string;
  /** Expected stdout, or for functional tests the JSON-encoded return value. */
  readonly output: string;
  readonly kind: 'stdin' | 'functional';
  /**
   * APPS/TACO convention: a functional test's expected output is often the return value wrapped
   * in a one-element list; such tests also pass when the result equals that element.
   */
  readonly accept_unwrapped?: boolean;
}

/** The `Task.data` of a coding problem (a type alias, so it is assignable to `Task.data`). */
export type CodeTaskData = {
  readonly tests: CodeTest[];
  /** Function (or `class Solution` method) functional tests call. */
  readonly fn_name?: string;
  readonly starter_code?: string;
  /** Subset and upstream source, e.g. `lcbv5`, `taco`. */
  readonly source: string;
  /** How many leading tests are public (shown with the statement); absent when unknown. */
  readonly public_test_count?: number;
};

/** Tests with the function name they imply. */
export interface NormalizedTests {
  readonly tests: CodeTest[];
  readonly fnName?: string;
}

/**
 * Normalises every test shape DeepCoder uses into `CodeTest`s:
 * - lcbv5/codeforces/LiveCodeBench: `[{input, output, testtype: 'stdin'|'functional'}]`;
 * - primeintellect: `[{type: 'stdin_stdout'|'function_call', input, output, fn_name?}]`;
 * - taco: `{inputs: [...], outputs: [...], fn_name?}`.
 * `raw` may be the JSON text the parquet files store. `fnName` is a name known from elsewhere
 * (LCB `metadata.func_name`, the starter code).
 * @throws InputError on an unknown shape or a functional test without a function name.
 */
export function normalizeCodeTests(raw: unknown, fnName?: string | null): NormalizedTests {
  const value = typeof raw === 'string' ? parseJson(raw, 'tests') : raw;
  if (Array.isArray(value)) return fromList(value, fnName ?? undefined);
  if (isRecord(value) && Array.isArray(value.inputs) && Array.isArray(value.outputs))
    return fromColumns(value, fnName ?? undefined);
  throw new InputError(`unknown code test shape: ${preview(value)}`, {
    hint: 'expected a list of {input, output, testtype|type} or {inputs, outputs}',
  });
}

/** The method name of a LeetCode-style starter (`class Solution: def name(self, ...)`), or the first function's. */
export function fnNameFromStarter(starter: string | null | undefined): string | undefined {
  if (!starter) return undefined;
  return /def\s+([A-Za-z_]\w*)\s*\(\s*self\b/.exec(starter)?.[1] ?? /def\s+([A-Za-z_]\w*)\s*\(/.exec(starter)?.[1];
}

function fromList(list: unknown[], knownFn: string | undefined): NormalizedTests {
  const first = list.find(isRecord);
  const fnName = knownFn || stringField(first, 'fn_name');
  const tests = list.map((entry, i) => {
    if (!isRecord(entry) || !('input' in entry) || !('output' in entry))
      throw new InputError(`code test ${i} has no input/output: ${preview(entry)}`);
    const tag = stringField(entry, 'testtype') ?? stringField(entry, 'type');
    // primeintellect tags function-call tests 'stdin_stdout' too; a fn_name is what marks them.
    const functional = tag === 'functional' || tag === 'function_call' || (tag !== 'stdin' && fnName !== undefined);
    return makeTest(entry.input, entry.output, functional, tag !== 'functional');
  });
  return finish(tests, fnName);
}

function fromColumns(columns: Record<string, unknown>, knownFn: string | undefined): NormalizedTests {
  const inputs = columns.inputs as unknown[];
  const outputs = columns.outputs as unknown[];
  if (inputs.length !== outputs.length)
    throw new InputError(`taco tests: ${inputs.length} inputs but ${outputs.length} outputs`);
  const fnName = knownFn || stringField(columns, 'fn_name');
  return finish(
    inputs.map((input, i) => makeTest(input, outputs[i], fnName !== undefined, true)),
    fnName,
  );
}

function makeTest(input: unknown, output: unknown, functional: boolean, unwrapRule: boolean): CodeTest {
  if (!functional) return { input: asText(input), output: asText(output), kind: 'stdin' };
  const args = Array.isArray(input) ? input.map((arg) => JSON.stringify(arg)).join('\n') : asText(input);
  const expected = typeof output === 'string' ? output : JSON.stringify(output);
  const wrapped = unwrapRule && Array.isArray(output) && output.length === 1;
  return wrapped
    ? { input: args, output: expected, kind: 'functional', accept_unwrapped: true }
    : { input: args, output: expected, kind: 'functional' };
}

function finish(tests: CodeTest[], fnName: string | undefined): NormalizedTests {
  if (tests.some((t) => t.kind === 'functional') && !fnName)
    throw new InputError('functional code tests without a function name', {
      hint: 'give fn_name, metadata.func_name or starter code',
    });
  return fnName ? { tests, fnName } : { tests };
}

function asText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value.join('\n');
  return JSON.stringify(value);
}

function stringField(value: unknown, key: string): string | undefined {
  if (!isRecord(value)) return undefined;
  const field = value[key];
  return typeof field === 'string' && field !== '' ? field : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** @throws InputError naming what was being parsed. */
export function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InputError(`${what} is not valid JSON: ${(error as Error).message}`);
  }
}

function preview(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 120 ? `${text.slice(0, 120)}...` : text;
}
