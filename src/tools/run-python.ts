import { tool, type Tool } from '@strands-agents/sdk';
import { z } from 'zod';
import type { CodeTaskData, CodeTest } from '../datasets/code-tests.js';
import { parseComponentOptions } from '../util/component-options.js';
import {
  DEFAULT_LIMITS,
  runCodeTests,
  sandboxPoolSizeOption,
  sharedSandboxPool,
  type SandboxLimits,
  type SandboxPool,
  type SandboxResult,
  type TestRunSummary,
} from './sandbox/index.js';
import type { EpisodeEnv, EpisodeTools, ToolDefinition, ToolRunContext } from './types.js';

const RunPythonOptions = z.strictObject({
  timeout_s: z
    .number()
    .positive()
    .default(10)
    .describe('CPU seconds per run (and per public test); the wall limit is twice that plus one second.'),
  memory_mb: z.number().int().positive().default(1024).describe('Address-space limit of the program.'),
  max_output_chars: z
    .number()
    .int()
    .positive()
    .default(2000)
    .describe(
      'Characters of stdout and of stderr shown to the model; more is cut with a note (longer = more context used).',
    ),
  sandbox_pool_size: sandboxPoolSizeOption,
});
type RunPythonConfig = z.infer<typeof RunPythonOptions>;

/** What the model is told about the tool. */
export const RUN_PYTHON_DESCRIPTION =
  'Run a Python 3 program in a sandbox (no network, no files outside its working directory). Give `code` and optionally `stdin`; ' +
  'or give `code` with `tests: "public"` to run it on the problem\'s example tests. Returns the status, stdout and stderr, or which tests passed.';

/**
 * Tool `run_python`: the agent runs code on inputs it chooses or on the task's public tests, in
 * the sandbox pool shared with `code_tests`. A run the program fails (error, timeout) is a normal
 * result the model reads; only a tool failure (bad arguments, no sandbox) is an error result.
 * @throws ConfigError on unknown or invalid options.
 */
export const runPythonTools: ToolDefinition = {
  name: 'run_python',
  options: RunPythonOptions,
  async create(options: Readonly<Record<string, unknown>>, ctx: ToolRunContext): Promise<EpisodeTools> {
    const config = parseComponentOptions(RunPythonOptions, options, 'tools.run_python.options');
    const pool = sharedSandboxPool({ size: config.sandbox_pool_size });
    pool.onWarning((message) => ctx.warn(message));
    return (env) => [runPythonTool(env, config, pool)];
  },
};

/** The tool bound to one episode (its task's public tests and its abort signal). */
export function runPythonTool(env: EpisodeEnv, config: RunPythonConfig, pool: SandboxPool): Tool {
  const limits: Partial<SandboxLimits> = {
    cpuMs: config.timeout_s * 1000,
    wallMs: config.timeout_s * 2000 + 1000,
    memoryMb: config.memory_mb,
  };
  return tool({
    name: 'run_python',
    description: RUN_PYTHON_DESCRIPTION,
    inputSchema: z.object({
      code: z.string().describe('The complete Python 3 program (or, for a function problem, the code defining it).'),
      stdin: z.string().optional().describe('Text given to the program on standard input.'),
      tests: z
        .enum(['public'])
        .optional()
        .describe('Set to "public" to run the code on the example tests of the problem.'),
    }),
    callback: async ({ code, stdin, tests }) => {
      if (tests !== undefined && stdin !== undefined) throw new Error('give either stdin or tests: "public", not both');
      if (tests === 'public')
        return formatTests(await runPublicTests(code, env, limits, pool), publicTests(env), config.max_output_chars);
      const result = await pool.run({ code, stdin, limits, signal: env.signal });
      return formatRun(result, limits, config.max_output_chars);
    },
  });
}

/** The task's public tests: the leading `public_test_count`, else the first test standing in for the statement's example. */
export function publicTests(env: EpisodeEnv): CodeTest[] {
  const data = env.task.data as Partial<CodeTaskData>;
  const all = Array.isArray(data.tests) ? data.tests : [];
  return all.slice(0, data.public_test_count ?? 1);
}

async function runPublicTests(
  code: string,
  env: EpisodeEnv,
  limits: Partial<SandboxLimits>,
  pool: SandboxPool,
): Promise<TestRunSummary> {
  const tests = publicTests(env);
  if (tests.length === 0) throw new Error('this problem has no public tests; run the code with your own stdin instead');
  const data = env.task.data as Partial<CodeTaskData>;
  return runCodeTests(code, tests, {
    pool,
    fnName: data.fn_name,
    limits,
    stopOnFirstFailure: false,
    signal: env.signal,
  });
}

/** One run as text a model can act on: status line, stdout (its start) and stderr (its end, where the error is), each cut to `max` characters. */
export function formatRun(result: SandboxResult, limits: Partial<SandboxLimits>, max: number): string {
  const lines = [
    `status: ${statusLine(result, limits)}`,
    'stdout:',
    section(result.stdout, max, 'head'),
    'stderr:',
    section(result.stderr, max, 'tail'),
  ];
  return lines.join('\n');
}

function statusLine(result: SandboxResult, limits: Partial<SandboxLimits>): string {
  const secs = `${(result.wallMs / 1000).toFixed(2)} s`;
  switch (result.status) {
    case 'ok':
      return `ok (exit code 0, ${secs})`;
    case 'runtime_error':
      return `runtime_error (exit code ${result.exitCode ?? result.signal}, ${secs})`;
    case 'timeout':
      return `timeout (${result.signal === 'SIGXCPU' ? `CPU limit of ${(limits.cpuMs ?? 0) / 1000} s` : `wall-clock limit of ${(limits.wallMs ?? 0) / 1000} s`} exceeded)`;
    case 'memory':
      return `memory (limit of ${limits.memoryMb} MB exceeded)`;
    case 'output_limit':
      return 'output_limit (the program wrote too much output and was stopped)';
    case 'file_limit':
      return `file_limit (a file grew past the limit of ${limits.fileMb ?? DEFAULT_LIMITS.fileMb} MB)`;
    default:
      return `killed (${result.signal ?? 'stopped'})`;
  }
}

function section(text: string, max: number, keep: 'head' | 'tail'): string {
  if (text === '') return '(empty)';
  const trimmed = text.replace(/\n$/, '');
  if (trimmed.length <= max) return trimmed;
  const cut = trimmed.length - max;
  return keep === 'head'
    ? `${trimmed.slice(0, max)}\n... [${cut} more characters cut]`
    : `[${cut} earlier characters cut] ...\n${trimmed.slice(-max)}`;
}

/** Public-test results as text: a summary line, then one line per test with what failed. */
export function formatTests(summary: TestRunSummary, tests: readonly CodeTest[], max: number): string {
  const lines = [`public tests: ${summary.passed} of ${summary.total} passed`];
  for (const outcome of summary.outcomes) {
    const n = outcome.index + 1;
    if (outcome.verdict === 'passed') {
      lines.push(`test ${n}: passed`);
      continue;
    }
    lines.push(`test ${n}: ${outcome.verdict}${outcome.detail ? `: ${outcome.detail}` : ''}`);
    lines.push(`  input: ${JSON.stringify(clip(tests[outcome.index]?.input ?? '', max))}`);
  }
  return lines.join('\n');
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}...` : text;
}
