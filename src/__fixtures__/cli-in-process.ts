/**
 * The atk CLI's entry point called in this test process: what a command prints and its exit code,
 * without the second or so a fresh Node process and its imports cost. For tests of what a command
 * says; tests of the process itself (signals, the Node 22 re-exec, stdio) run the built CLI.
 */
import { vi } from 'vitest';
import { main } from '../cli/main.js';

/** What one command printed and the exit code it set. */
export interface CliOutcome {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `atk <args>` in this process, from `cwd` when given (restored afterwards). Calls must not
 * overlap: the working directory, the exit code and the standard streams are the process's own.
 */
export async function runCliInProcess(args: readonly string[], cwd?: string): Promise<CliOutcome> {
  const printed = { stdout: '', stderr: '' };
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    printed.stdout += String(chunk);
    return true;
  });
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    printed.stderr += String(chunk);
    return true;
  });
  const before = { cwd: process.cwd(), exitCode: process.exitCode };
  process.exitCode = undefined;
  try {
    if (cwd) process.chdir(cwd);
    await main(args);
    return { exitCode: Number(process.exitCode ?? 0), ...printed };
  } finally {
    process.chdir(before.cwd);
    process.exitCode = before.exitCode;
    out.mockRestore();
    err.mockRestore();
  }
}
