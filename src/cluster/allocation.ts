/**
 * The nodes atk may place processes on: this machine (local), the Slurm allocation it runs inside
 * (read from the environment salloc/sbatch set), or the recipe's host list.
 */
import type { ClusterConfig } from '../recipe/cluster-schema.js';
import { expandHostlist } from './hostlist.js';

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
 * The allocation the recipe's launcher sees. For slurm, undefined outside an allocation (no
 * SLURM_JOB_ID/SLURM_JOB_NODELIST in `env`): `atk validate` then checks the recipe alone.
 * @throws InputError when a hostlist is malformed.
 */
export function readAllocation(cluster: ClusterConfig, env: NodeJS.ProcessEnv = process.env): Allocation | undefined {
  if (cluster.launcher === 'local')
    return { launcher: 'local', nodes: ['localhost'], gpusPerNode: undefined, source: 'this machine' };
  if (cluster.launcher === 'hosts') {
    return {
      launcher: 'hosts',
      nodes: (cluster.hosts ?? []).flatMap((h) => expandHostlist(h)),
      gpusPerNode: cluster.gpus_per_node,
      source: 'cluster.hosts',
    };
  }
  const nodelist = env.SLURM_JOB_NODELIST ?? env.SLURM_NODELIST;
  const jobId = env.SLURM_JOB_ID ?? env.SLURM_JOBID;
  if (!nodelist || !jobId) return undefined;
  return {
    launcher: 'slurm',
    nodes: expandHostlist(nodelist),
    gpusPerNode: slurmGpusPerNode(env),
    jobId,
    source: `SLURM_JOB_NODELIST=${nodelist}`,
  };
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
