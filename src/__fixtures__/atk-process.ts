// The atk CLI as a real subprocess, for the end-to-end tests of `atk run` and `atk launch`.
import { execa } from 'execa';
import { atkCliCommand } from './engine-processes.js';

/** What an atk subprocess left: its exit code, its stdout, and its stderr less npm's warnings and blank lines. */
export interface AtkProcessResult {
  readonly exitCode: number | undefined;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `atk <args>` (see atkCliCommand) in `cwd` to its end, never rejecting: a failed run is in its result. */
export async function runAtk(
  args: readonly string[],
  options: { readonly cwd: string; readonly env?: Readonly<Record<string, string>> },
): Promise<AtkProcessResult> {
  const [file, ...cli] = atkCliCommand();
  const result = await execa(file!, [...cli, ...args], {
    reject: false,
    cwd: options.cwd,
    ...(options.env ? { env: options.env } : {}),
  });
  return {
    exitCode: result.exitCode,
    stdout: String(result.stdout),
    stderr: String(result.stderr)
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('npm warn'))
      .join('\n'),
  };
}
