import { InputError } from '../errors/index.js';
import { lcbPrompt } from './code-prompt.js';
import { fnNameFromStarter, normalizeCodeTests, parseJson, type CodeTaskData, type CodeTest } from './code-tests.js';
import { decodeLcbPrivateTests } from './lcb-pickle.js';
import type { Task } from './types.js';

/**
 * One coding problem as a line of normalised jsonl: what `atk data fetch deepcoder` writes and
 * the `deepcoder` dataset reads (the shared sample's lines, which tag tests with `testtype`
 * instead of `kind`, are read too).
 */
export interface CodeProblemRecord {
  readonly id: string;
  /** Subset: primeintellect, taco, lcbv5, codeforces, code_contests, livecodebench. */
  readonly source: string;
  readonly split: string;
  readonly problem: string;
  readonly starter_code: string;
  readonly fn_name: string | null;
  readonly tests: CodeTest[];
  readonly public_test_count?: number;
}

/** The agent task for a record: the LCB/rLLM prompt and the tests the reward and tool use. */
export function taskFromRecord(record: CodeProblemRecord): Task {
  const data: CodeTaskData = {
    tests: record.tests,
    source: record.source,
    ...(record.fn_name ? { fn_name: record.fn_name } : {}),
    ...(record.starter_code ? { starter_code: record.starter_code } : {}),
    ...(record.public_test_count !== undefined ? { public_test_count: record.public_test_count } : {}),
  };
  return { id: record.id, prompt: lcbPrompt(record.problem, record.starter_code), data };
}

/**
 * A row of `agentica-org/DeepCoder-Preview-Dataset` (columns `problem`, `tests` as JSON text,
 * optional `starter_code`, `metadata` as JSON text with `func_name`).
 * @throws InputError on a row without problem or tests.
 */
export function recordFromDeepCoderRow(
  row: Record<string, unknown>,
  subset: string,
  split: string,
  index: number,
): CodeProblemRecord {
  const problem = requireString(row, 'problem', `${subset}/${split} row ${index}`);
  const starter = typeof row.starter_code === 'string' ? row.starter_code : '';
  const metadata =
    typeof row.metadata === 'string' && row.metadata ? parseJson(row.metadata, 'metadata') : row.metadata;
  const known = funcName(metadata) ?? fnNameFromStarter(starter);
  const { tests, fnName } = normalizeCodeTests(row.tests, known);
  return {
    id: `${subset}_${split}_${index}`,
    source: subset,
    split,
    problem,
    starter_code: starter,
    fn_name: fnName ?? null,
    tests,
  };
}

/**
 * A row of LiveCodeBench `code_generation_lite`: public tests as JSON text, private tests as
 * base64(zlib(pickle(JSON))). Public tests come first and are counted as public.
 * @throws InputError on malformed tests or a refused pickle.
 */
export function recordFromLcbRow(row: Record<string, unknown>, split: string, index: number): CodeProblemRecord {
  const where = `livecodebench row ${index}`;
  const problem = requireString(row, 'question_content', where);
  const starter = typeof row.starter_code === 'string' ? row.starter_code : '';
  const metadata =
    typeof row.metadata === 'string' && row.metadata ? parseJson(row.metadata, 'metadata') : row.metadata;
  const known = funcName(metadata) ?? fnNameFromStarter(starter);
  const pub = normalizeCodeTests(requireString(row, 'public_test_cases', where), known);
  const fnName = pub.fnName ?? known;
  const priv =
    typeof row.private_test_cases === 'string' && row.private_test_cases
      ? decodeLcbPrivateTests(row.private_test_cases, fnName)
      : [];
  const id =
    typeof row.question_id === 'string' && row.question_id
      ? `livecodebench_${row.question_id}`
      : `livecodebench_${split}_${index}`;
  return {
    id,
    source: 'livecodebench',
    split,
    problem,
    starter_code: starter,
    fn_name: fnName ?? null,
    tests: [...pub.tests, ...priv],
    public_test_count: pub.tests.length,
  };
}

/**
 * One jsonl line: a fetched record (tests carry `kind`) or a line of the shared sample
 * `normalized/code_sample.jsonl` (tests carry `testtype`; all of them public).
 * @throws InputError on a malformed line.
 */
export function recordFromLine(value: unknown, where: string): CodeProblemRecord {
  if (typeof value !== 'object' || value === null) throw new InputError(`${where}: not a JSON object`);
  const row = value as Record<string, unknown>;
  const id = requireString(row, 'id', where);
  const problem = requireString(row, 'problem', where);
  const starter = typeof row.starter_code === 'string' ? row.starter_code : '';
  const known = typeof row.fn_name === 'string' && row.fn_name ? row.fn_name : undefined;
  const alreadyNormal =
    Array.isArray(row.tests) && row.tests.every((t) => typeof t === 'object' && t !== null && 'kind' in t);
  const { tests, fnName } = alreadyNormal
    ? { tests: row.tests as CodeTest[], fnName: known }
    : normalizeCodeTests(row.tests, known);
  const split = typeof row.split === 'string' ? row.split : 'test';
  const publicCount =
    typeof row.public_test_count === 'number' ? row.public_test_count : alreadyNormal ? undefined : tests.length;
  return {
    id,
    source:
      typeof row.source === 'string' && /^[a-z0-9_]+$/.test(row.source)
        ? row.source
        : id.replace(/_(train|test)_\d+$/, ''),
    split,
    problem,
    starter_code: starter,
    fn_name: fnName ?? null,
    tests,
    ...(publicCount !== undefined ? { public_test_count: publicCount } : {}),
  };
}

function funcName(metadata: unknown): string | undefined {
  if (typeof metadata !== 'object' || metadata === null) return undefined;
  const name = (metadata as Record<string, unknown>).func_name;
  return typeof name === 'string' && name ? name : undefined;
}

function requireString(row: Record<string, unknown>, key: string, where: string): string {
  const value = row[key];
  if (typeof value !== 'string') throw new InputError(`${where}: '${key}' is missing or not a string`);
  return value;
}
