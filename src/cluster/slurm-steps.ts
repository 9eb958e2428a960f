/**
 * Slurm job steps atk starts inside the allocation it runs in: the `srun` command line that pins a
 * process to its nodes, the node's address, and cancelling the steps atk started on every exit path.
 */
import { spawn } from 'node:child_process';
import { execa } from 'execa';
import { ProviderError } from '../errors/index.js';

/** Where and as what one step runs. */
export interface StepSpec {
  readonly jobId: string;
  /** Step name, `atk-<pid>-<component>`: steps are found and cancelled by it. */
  readonly name: string;
  readonly nodes: readonly string[];
  /** GPUs the step needs on each node (`--gres=gpu:N`); none requested when absent. */
  readonly gpusPerNode?: number;
}

/** A process command: executable, arguments, added environment (as EngineCommand and TrainerCommand). */
export interface StepCommand {
  readonly file: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

/**
 * `srun` running `command` as one task on each of `spec.nodes`. `--overlap` because atk places the
 * steps itself and two replicas may share a node; `--kill-on-bad-exit` so one failed rank ends the step;
 * the environment (PYTHONPATH, CUDA_VISIBLE_DEVICES, the run token) travels with `--export=ALL`.
 */
export function srunCommand(spec: StepSpec, command: StepCommand): StepCommand {
  const n = String(spec.nodes.length);
  return {
    file: 'srun',
    args: [
      `--jobid=${spec.jobId}`,
      `--nodes=${n}`,
      `--ntasks=${n}`,
      '--ntasks-per-node=1',
      `--nodelist=${spec.nodes.join(',')}`,
      `--job-name=${spec.name}`,
      '--overlap',
      '--kill-on-bad-exit=1',
      '--export=ALL',
      '--unbuffered',
      ...(spec.gpusPerNode ? [`--gres=gpu:${spec.gpusPerNode}`] : []),
      '--',
      command.file,
      ...command.args,
    ],
    env: command.env,
  };
}

/**
 * The address other nodes reach `node` at: its NodeAddr in `scontrol show node`.
 * @throws ProviderError when Slurm does not know the node.
 */
export async function slurmNodeAddress(node: string): Promise<string> {
  const result = await execa('scontrol', ['show', 'node', '-o', node], { reject: false, timeout: 15_000 });
  const address = /\bNodeAddr=(\S+)/.exec(result.stdout)?.[1];
  if (result.exitCode !== 0 || !address) {
    throw new ProviderError(
      `slurm: scontrol show node ${node} gave no NodeAddr (${(result.stderr || result.stdout).trim() || `exit ${result.exitCode}`})`,
      {
        hint: 'is atk running inside the allocation (salloc/sbatch), with scontrol on PATH?',
      },
    );
  }
  return address;
}

/** Ids (`<job>.<step>`) of the job's running steps whose name starts with `prefix`. */
export async function stepIds(jobId: string, prefix: string): Promise<string[]> {
  const result = await execa('squeue', ['-h', '-s', '-j', jobId, '-o', '%i %j'], { reject: false, timeout: 15_000 });
  return result.stdout
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter(([id, name]) => id && name?.startsWith(prefix))
    .map(([id]) => id!);
}

/** Cancels the job's steps named `prefix…` (bounded: 15 s per Slurm call); returns the ids cancelled. */
export async function cancelSteps(jobId: string, prefix: string): Promise<string[]> {
  const ids = await stepIds(jobId, prefix);
  if (ids.length) await execa('scancel', ids, { reject: false, timeout: 15_000 });
  return ids;
}

/**
 * A detached shell that cancels the steps named `prefix…` once atk's process is gone (SIGKILL, a crash):
 * srun usually takes its step down with it, but a step whose srun was killed can outlive it by seconds,
 * and a trainer step on another node cannot watch atk's pid itself.
 * @returns a function that stops the watchdog.
 */
export function startStepWatchdog(jobId: string, prefix: string, parentPid = process.pid): () => void {
  const script = `while kill -0 "$1" 2>/dev/null; do sleep 1; done
ids=$(squeue -h -s -j "$2" -o '%i %j' 2>/dev/null | awk -v p="$3" 'index($2, p) == 1 {print $1}')
[ -n "$ids" ] && scancel $ids; exit 0`;
  const child = spawn('/bin/sh', ['-c', script, 'atk-step-watchdog', String(parentPid), jobId, prefix], {
    detached: true,
    stdio: 'ignore',
  });
  child.on('error', () => undefined);
  child.unref();
  return () => {
    if (child.exitCode === null && child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  };
}

/**
 * Copies directory `dir` to `<root>/<name>` on `node` without a shared disk: a tar stream into an srun
 * step that first empties `root` (the previous sync's copy, no longer needed once it is loaded).
 * @returns the copy's path on the node.
 * @throws ProviderError quoting srun or tar when the copy fails.
 */
export async function uploadDir(
  jobId: string,
  stepName: string,
  node: string,
  dir: string,
  root: string,
  name: string,
): Promise<string> {
  const script = 'rm -rf "$1" && mkdir -p "$1/$2" && tar -x -C "$1/$2"';
  const srun = [
    '--jobid',
    jobId,
    '--nodes=1',
    '--ntasks=1',
    `--nodelist=${node}`,
    `--job-name=${stepName}`,
    '--overlap',
    '--',
    'sh',
    '-c',
    script,
    'sh',
    root,
    name,
  ];
  const result = await execa('tar', ['-c', '-C', dir, '.'], { reject: false, timeout: 600_000 }).pipe('srun', srun, {
    reject: false,
    timeout: 600_000,
  });
  if (result.exitCode !== 0) {
    throw new ProviderError(
      `slurm: copying ${dir} to ${node}:${root}/${name} failed (${(result.stderr || result.stdout).trim() || `exit ${result.exitCode}`})`,
      {
        hint: 'with a filesystem every node sees, set cluster.shared_dir and atk reads the weights there instead',
      },
    );
  }
  return `${root}/${name}`;
}
