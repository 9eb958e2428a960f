/**
 * The hosts launcher's copy of a sync directory to an engine host without a shared disk: the same
 * command template that starts the processes (`[ssh, "{host}"]`) runs `rm`, `mkdir` and a `tar -x` fed
 * by a local `tar -c`, as the Slurm launcher streams it into an srun step.
 */
import { execa } from 'execa';
import { ProviderError } from '../errors/index.js';

/** Limit for one command of the copy (a full-weight checkpoint of a large model takes minutes). */
const UPLOAD_TIMEOUT_MS = 600_000;

/**
 * Copies directory `dir` to `<root>/<name>` on `host` through `template` ({host} filled in), removing
 * `root` first (the previous sync's copy, loaded already). Every remote argument is a plain word, so a
 * template through ssh (which joins its arguments into one remote shell line) and one that runs the
 * command directly (`[env, "ATK_HOST={host}"]`) read them the same way.
 * @returns the copy's path on the host.
 * @throws ProviderError quoting the command's output when a part of the copy fails.
 */
export async function uploadThroughTemplate(
  template: readonly string[],
  host: string,
  dir: string,
  root: string,
  name: string,
): Promise<string> {
  const [file, ...prefix] = template.map((part) => part.replaceAll('{host}', host));
  const remote = (args: readonly string[]): [string, string[]] => [file!, [...prefix, ...args]];
  const target = `${root}/${name}`;
  const fail = (what: string, result: { exitCode?: number | undefined; stderr: unknown; stdout: unknown }): never => {
    const output = `${String(result.stderr)}${String(result.stdout)}`.trim();
    throw new ProviderError(
      `hosts: ${what} for the copy of ${dir} to ${host}:${target} failed (${output || `exit ${result.exitCode}`})`,
      { hint: 'with a filesystem every host sees, set cluster.shared_dir and atk reads the weights there instead' },
    );
  };
  for (const args of [
    ['rm', '-rf', root],
    ['mkdir', '-p', target],
  ]) {
    const result = await execa(...remote(args), { reject: false, timeout: UPLOAD_TIMEOUT_MS });
    if (result.exitCode !== 0) fail(args.slice(0, 2).join(' '), result);
  }
  const copied = await execa('tar', ['-c', '-C', dir, '.'], { reject: false, timeout: UPLOAD_TIMEOUT_MS }).pipe(
    ...remote(['tar', '-x', '-C', target]),
    { reject: false, timeout: UPLOAD_TIMEOUT_MS },
  );
  if (copied.exitCode !== 0) fail('tar -x', copied);
  return target;
}
