/**
 * The nodes atk may place processes on: this machine (local), the Slurm allocation it runs inside
 * (read from the environment salloc/sbatch set), or the recipe's host list. Each launcher reads its own
 * (launchers.ts, readAllocation).
 */
import type { ClusterConfig } from '../recipe/cluster-schema.js';

/** Nodes available to a run, in placement order. */
export interface Allocation {
  readonly launcher: ClusterConfig['launcher'];
  readonly nodes: readonly string[];
  /** GPUs on each node; undefined when the allocation does not say. */
  readonly gpusPerNode: number | undefined;
  /** The Slurm job id (steps are started and cancelled in it). */
  readonly jobId?: string;
  /** Where the node list came from, for messages: `SLURM_JOB_NODELIST=n[1-2]`, `cluster.hosts`. */
  readonly source: string;
}

/**
 * GPUs per node from what Slurm sets: SLURM_GPUS_ON_NODE (a count), else SLURM_GPUS_PER_NODE
 * (`4` or `a100:4`), else SLURM_JOB_GPUS (indices on this node, `0,1`). Undefined when none is set.
 */
export function slurmGpusPerNode(env: NodeJS.ProcessEnv): number | undefined {
  const count = (text: string | undefined): number | undefined => {
    const match = text === undefined ? null : /(?:^|:)(\d+)$/.exec(text.trim());
    return match ? Number(match[1]) : undefined;
  };
  const jobGpus = env.SLURM_JOB_GPUS?.trim();
  return (
    count(env.SLURM_GPUS_ON_NODE) ?? count(env.SLURM_GPUS_PER_NODE) ?? (jobGpus ? jobGpus.split(',').length : undefined)
  );
}
