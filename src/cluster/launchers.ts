/**
 * The ways a cluster launcher reaches its nodes, one object per `cluster.launcher`: how a node is
 * addressed, how a command runs there, how a directory is copied there, how its steps are watched and
 * ended. The local launcher places nothing (everything stays on loopback), so it has no nodes to reach.
 */
import type { ClusterConfig } from '../recipe/cluster-schema.js';
import type { Allocation } from './allocation.js';
import { uploadThroughTemplate } from './hosts-upload.js';
import {
  cancelSteps,
  slurmNodeAddress,
  srunCommand,
  startStepWatchdog,
  uploadDir,
  type StepCommand,
} from './slurm-steps.js';

/** One launcher's way of reaching the nodes of an allocation. */
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

/**
 * How the recipe's `cluster.launcher` reaches the nodes of an allocation (`prefix` starts every step name
 * of this run); undefined for the local launcher, which places nothing.
 */
export function launcherFor(cluster: ClusterConfig): LauncherFactory | undefined {
  return LAUNCHERS[cluster.launcher];
}

/** A launcher for one allocation; `prefix` starts every step name of this run. */
export type LauncherFactory = (allocation: Allocation, cluster: ClusterConfig, prefix: string) => Launcher;

const LAUNCHERS: Readonly<Record<ClusterConfig['launcher'], LauncherFactory | undefined>> = {
  local: undefined,
  slurm: slurmLauncher,
  hosts: hostsLauncher,
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
