/**
 * The cluster launchers, one object per `cluster.launcher`: the nodes each may place on, and how it
 * reaches them (how a node is addressed, how a command runs there, how a directory is copied there, how
 * its steps are watched and ended). The local launcher places nothing: everything stays on loopback.
 */
import type { ClusterConfig } from '../recipe/cluster-schema.js';
import { slurmGpusPerNode, type Allocation } from './allocation.js';
import { expandHostlist } from './hostlist.js';
import { uploadThroughTemplate } from './hosts-upload.js';
import {
  cancelSteps,
  slurmNodeAddress,
  srunCommand,
  startStepWatchdog,
  uploadDir,
  type StepCommand,
} from './slurm-steps.js';

/** One cluster launcher: the nodes it may place on, and how it reaches them. */
export interface ClusterLauncher {
  /**
   * The allocation this launcher sees; undefined for slurm outside one (no SLURM_JOB_ID/SLURM_JOB_NODELIST
   * in `env`): `atk validate` then checks the recipe alone.
   * @throws InputError when a hostlist is malformed.
   */
  allocation(cluster: ClusterConfig, env: NodeJS.ProcessEnv): Allocation | undefined;
  /** How it reaches the nodes of an allocation; absent for local, which places nothing. */
  readonly reach?: LauncherFactory;
}

/** A launcher's way of reaching the nodes of one allocation. */
export interface Launcher {
  /** The address other nodes reach `node` at. */
  address(node: string): Promise<string>;
  /** `command` run as step `name` on `nodes` (GPUs per node where the launcher asks for them). */
  run<C extends StepCommand>(step: PlacedStep, command: C): C;
  /** Copies `dir` to `<root>/<name>` on `node` (a step called `step` where steps are named); returns the copy's path. */
  upload(step: string, node: string, dir: string, root: string, name: string): Promise<string>;
  /** Where `node` is, for messages: `node n2 (slurm job 7)` or `host gpu3`. */
  where(node: string): string;
  /** Starts ending this run's steps should atk itself die; returns how to stop watching. */
  watchdog(): () => void;
  /** Ends every step of this run still running. */
  cancel(): Promise<void>;
}

/** A process placed on nodes: its step name (`<prefix><component>`), its nodes and the GPUs it needs on each. */
export interface PlacedStep {
  readonly name: string;
  readonly nodes: readonly string[];
  readonly gpusPerNode?: number | undefined;
}

/** The allocation the recipe's launcher sees (see {@link ClusterLauncher.allocation}). */
export function readAllocation(cluster: ClusterConfig, env: NodeJS.ProcessEnv = process.env): Allocation | undefined {
  return LAUNCHERS[cluster.launcher].allocation(cluster, env);
}

/** How the recipe's launcher reaches the nodes of an allocation; undefined for the local launcher. */
export function launcherFor(cluster: ClusterConfig): LauncherFactory | undefined {
  return LAUNCHERS[cluster.launcher].reach;
}

/** A launcher for one allocation; `prefix` starts every step name of this run. */
export type LauncherFactory = (allocation: Allocation, cluster: ClusterConfig, prefix: string) => Launcher;

const LAUNCHERS: Readonly<Record<ClusterConfig['launcher'], ClusterLauncher>> = {
  local: {
    allocation: () => ({ launcher: 'local', nodes: ['localhost'], gpusPerNode: undefined, source: 'this machine' }),
  },
  slurm: {
    allocation: (_cluster, env) => {
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
    },
    reach: slurmLauncher,
  },
  hosts: {
    allocation: (cluster) => ({
      launcher: 'hosts',
      nodes: (cluster.hosts ?? []).flatMap((h) => expandHostlist(h)),
      gpusPerNode: cluster.gpus_per_node,
      source: 'cluster.hosts',
    }),
    reach: hostsLauncher,
  },
};

/** `srun` steps inside the Slurm allocation atk runs in, found and cancelled by their name prefix. */
function slurmLauncher(allocation: Allocation, _cluster: ClusterConfig, prefix: string): Launcher {
  const jobId = allocation.jobId!;
  return {
    address: (node) => slurmNodeAddress(node),
    run: (step, command) => ({
      ...command,
      ...srunCommand(
        { jobId, name: step.name, nodes: step.nodes, ...(step.gpusPerNode ? { gpusPerNode: step.gpusPerNode } : {}) },
        command,
      ),
    }),
    upload: (step, node, dir, root, name) => uploadDir(jobId, step, node, dir, root, name),
    where: (node) => `node ${node} (slurm job ${jobId})`,
    watchdog: () => startStepWatchdog(jobId, prefix),
    cancel: async () => void (await cancelSteps(jobId, prefix)),
  };
}

/** The recipe's host list, each command run through `cluster.command` (`[ssh, "{host}"]`) on the step's first host. */
function hostsLauncher(_allocation: Allocation, cluster: ClusterConfig): Launcher {
  return {
    address: async (node) => node,
    run: (step, command) => ({ ...command, ...hostsCommand(cluster.command, step.nodes[0]!, command) }),
    upload: (_step, node, dir, root, name) => uploadThroughTemplate(cluster.command, node, dir, root, name),
    where: (node) => `host ${node}`,
    watchdog: () => () => undefined,
    // No steps: each placed process ends with the command-template process that runs it.
    cancel: async () => undefined,
  };
}

/**
 * The hosts launcher's command: the template with {host} filled in, then `env K=V ...` (ssh does not
 * carry the environment), then the command.
 */
export function hostsCommand(template: readonly string[], host: string, command: StepCommand): StepCommand {
  const prefix = template.map((part) => part.replaceAll('{host}', host));
  const env = Object.entries(command.env).map(([k, v]) => `${k}=${v}`);
  const [file, ...rest] = prefix;
  return { file: file!, args: [...rest, 'env', ...env, command.file, ...command.args], env: command.env };
}
