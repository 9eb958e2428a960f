/**
 * `atk launch slurm`: the sbatch script that runs `atk run` on the first node of a new allocation,
 * for users who submit from a login node. Inside the job atk reads the allocation and places the
 * trainer and engines as srun steps, exactly as under salloc.
 */
import { execa } from 'execa';
import { ProviderError } from '../errors/index.js';
import { shellQuote } from '../util/shell-quote.js';

/** What the script asks Slurm for and runs. */
export interface SbatchSpec {
  readonly jobName: string;
  readonly nodes: number;
  /** sbatch --time (e.g. 12:00:00); the partition's default when absent. */
  readonly time?: string;
  readonly partition?: string;
  readonly gpusPerNode?: number;
  /** Where the job's own stdout/stderr go (%j is the job id). */
  readonly output: string;
  /** Directory atk runs in (relative recipe and runs_dir paths resolve against it). */
  readonly cwd: string;
  /** The atk command line: executable and arguments, e.g. [node, /path/bin/atk, run, recipe.yaml]. */
  readonly command: readonly string[];
}

/** The sbatch script: #SBATCH lines, then `atk run` in `cwd` (exec, so scancel of the job reaches atk). */
export function sbatchScript(spec: SbatchSpec): string {
  const directives = [
    `--job-name=${spec.jobName}`,
    `--nodes=${spec.nodes}`,
    '--ntasks-per-node=1',
    `--output=${spec.output}`,
    ...(spec.time ? [`--time=${spec.time}`] : []),
    ...(spec.partition ? [`--partition=${spec.partition}`] : []),
    ...(spec.gpusPerNode ? [`--gpus-per-node=${spec.gpusPerNode}`] : []),
  ];
  return [
    '#!/bin/bash',
    ...directives.map((d) => `#SBATCH ${d}`),
    '# Written by atk launch slurm: atk runs on the first node and starts the trainer and engines as srun steps.',
    'set -euo pipefail',
    `cd ${shellQuote(spec.cwd)}`,
    `exec ${spec.command.map(shellQuote).join(' ')}`,
    '',
  ].join('\n');
}

/**
 * Submits `script` with `sbatch --parsable`; returns the job id.
 * @throws ProviderError quoting sbatch's error when the submission is refused.
 */
export async function submitSbatch(script: string, env?: NodeJS.ProcessEnv): Promise<string> {
  const result = await execa('sbatch', ['--parsable', script], {
    reject: false,
    timeout: 60_000,
    ...(env ? { env } : {}),
  });
  const jobId = result.stdout.trim().split(';')[0];
  if (result.exitCode !== 0 || !jobId || !/^\d+$/.test(jobId)) {
    throw new ProviderError(
      `sbatch refused ${script}: ${(result.stderr || result.stdout).trim() || `exit ${result.exitCode}`}`,
      {
        hint: 'check the partition, time limit and node count against sinfo; the script is kept for a manual sbatch',
      },
    );
  }
  return jobId;
}
