/**
 * Starting the trainer and the engine replicas where the recipe's cluster launcher places them: each
 * as an `srun` step inside the Slurm allocation, or through the hosts command template (launchers.ts).
 * The launchers in src/trainer and src/engines stay the same; this module only tells them the address
 * to bind and wraps their command. It also watches the placed processes (placed-guard.ts), so a lost
 * node or step fails the run with the node and component named, and cancels the steps on every exit path.
 */
import { cp, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { ConfigError, ProviderError } from '../errors/index.js';
import { replicaGpus } from '../engines/launch/launch-engines.js';
import type { PolicyPlacement } from '../policy/index.js';
import type { ResolvedRecipe } from '../recipe/resolve.js';
import { freePort } from '../util/free-port.js';
import { ensureRunToken, RUN_TOKEN_ENV } from '../util/run-token.js';
import { launcherFor, readAllocation } from './launchers.js';
import { multiNodeTrainerCommand } from './multinode-trainer.js';
import { planPlacement, placementDemand } from './placement.js';
import { guardPlacedPolicy, type PlacedProcess, type WatchedPlacement } from './placed-guard.js';
import type { StepCommand } from './slurm-steps.js';

/** How the run's processes are placed on the cluster, and the means to watch and end them. */
export interface ClusterLaunch extends PolicyPlacement, WatchedPlacement {
  /**
   * Puts a written sync directory where replica `replica` reads it and returns that path (engine-sync's
   * stage): a copy in cluster.shared_dir, or without one a copy streamed to the replica's node (an srun
   * step on slurm, the command template on hosts). The directory is read where atk runs.
   */
  readonly stage: (replica: number, dir: string) => Promise<string>;
  /** Cancels every step still running (slurm) and stops the watchdog; idempotent. */
  close(): Promise<void>;
}

/**
 * The cluster placement of `recipe`, or undefined for the local launcher (everything on loopback).
 * @throws ConfigError outside a Slurm allocation or when the allocation cannot hold the recipe;
 * ProviderError when a node's address cannot be found.
 */
export async function startClusterLaunch(
  recipe: ResolvedRecipe,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ClusterLaunch | undefined> {
  const { cluster } = recipe;
  const launch = launcherFor(cluster);
  if (!launch) return undefined;
  const allocation = readAllocation(cluster, env);
  if (!allocation) {
    throw new ConfigError(
      [
        {
          file: '',
          line: 0,
          col: 0,
          path: 'cluster.launcher',
          message: 'slurm: atk is not inside an allocation (SLURM_JOB_ID and SLURM_JOB_NODELIST are unset)',
        },
      ],
      {
        hint: 'run it under salloc or sbatch, or submit it with atk launch slurm <recipe>',
      },
    );
  }
  const { placement, problems } = planPlacement(recipe, allocation);
  if (!placement) throw new ConfigError(problems.map((p) => ({ file: '', line: 0, col: 0, ...p })));
  const prefix = `atk-${process.pid}-`;
  const launcher = launch(allocation, cluster, prefix);
  const nodes = [...new Set([...placement.trainerNodes, ...placement.engineReplicas.map((r) => r.node)])];
  const addresses = new Map(
    await Promise.all(nodes.map(async (node) => [node, await launcher.address(node)] as const)),
  );
  // Every placed listener requires the token (validation refuses auth none off this machine).
  const tokenEnv: Record<string, string> = cluster.auth === 'token' ? { [RUN_TOKEN_ENV]: ensureRunToken(env) } : {};
  const wrap =
    (stepName: string, stepNodes: readonly string[], gpusPerNode?: number) =>
    <C extends StepCommand>(local: C): C =>
      launcher.run(
        { name: `${prefix}${stepName}`, nodes: stepNodes, gpusPerNode },
        { ...local, env: { ...local.env, ...tokenEnv } },
      );
  const trainerHost = addresses.get(placement.trainerNodes[0]!)!;
  const placeTrainer = wrap('trainer', placement.trainerNodes, recipe.model.trainer.gpus.length || undefined);
  const multiNode = placement.trainerNodes.length > 1;
  // torch.distributed's store on the first trainer node (free here; on another host it is a guess that is rarely wrong).
  const masterPort = multiNode ? await freePort() : 0;
  const demand = placementDemand(recipe);
  const engine = recipe.model.engine;
  const shares = replicaGpus(engine.gpus, Math.max(demand.replicasPerNode, 1));
  const stopWatchdog = launcher.watchdog();
  const watched: { process: PlacedProcess; ended?: number | null }[] = [];
  const where = (node: string): string => launcher.where(node);
  let closing = false;
  let closed: Promise<void> | undefined;
  // One copy per sync however many replicas ask for it (they ask at once).
  let shared: { readonly dir: string; readonly copy: Promise<string> } | undefined;
  const stage =
    cluster.shared_dir !== undefined
      ? (_replica: number, dir: string): Promise<string> => {
          if (shared?.dir !== dir)
            shared = {
              dir,
              copy: copyToShared(dir, join(cluster.shared_dir!, `atk-sync-${process.pid}`), basename(dir)),
            };
          return shared.copy;
        }
      : (replica: number, dir: string): Promise<string> =>
          launcher.upload(
            `${prefix}upload-${replica}`,
            placement.engineReplicas[replica]!.node,
            dir,
            `/tmp/atk-sync-${process.pid}-r${replica}`,
            basename(dir),
          );
  const clusterLaunch: ClusterLaunch = {
    allocation,
    placement,
    stage,
    guard: (policy, trainer, engines) => guardPlacedPolicy(policy, clusterLaunch, trainer, engines, recipe.cluster),
    trainer: {
      host: trainerHost,
      wrap: (command) =>
        placeTrainer(
          multiNode
            ? {
                ...command,
                ...multiNodeTrainerCommand(
                  command,
                  placement.trainerNodes.length,
                  Math.max(recipe.model.trainer.gpus.length, 1),
                  trainerHost,
                  masterPort,
                ),
              }
            : command,
        ),
    },
    place: (replica) => {
      const { node } = placement.engineReplicas[replica]!;
      const placed = wrap(`engine-${replica}`, [node], engine.gpus_per_replica);
      return {
        host: addresses.get(node)!,
        gpus: shares[replica % shares.length]!,
        ...(tokenEnv[RUN_TOKEN_ENV] ? { token: tokenEnv[RUN_TOKEN_ENV] } : {}),
        wrap: placed,
      };
    },
    watch: (processes) => {
      for (const process of processes) {
        const entry: { process: PlacedProcess; ended?: number | null } = { process };
        watched.push(entry);
        void process.exited.then((code) => void (entry.ended = code));
      }
    },
    where,
    failure: () => {
      if (closing) return undefined;
      const lost = watched.find((w) => w.ended !== undefined);
      if (!lost) return undefined;
      const { component, node, logFile } = lost.process;
      const how = lost.ended === null ? 'was killed' : `exited with code ${lost.ended}`;
      return new ProviderError(
        `${component} on ${where(node)} ${how} during the run (log: logs/${basename(logFile)})`,
        {
          hint: 'the node or its step was lost (scancel, node failure, out of memory); atk run --resume continues from the last checkpoint, also on a new allocation',
        },
      );
    },
    close: () =>
      (closed ??= (async () => {
        closing = true;
        stopWatchdog();
        await launcher.cancel();
      })()),
  };
  return clusterLaunch;
}

/** Copies a sync directory into the shared directory (emptied of the previous one first); returns the copy. */
async function copyToShared(dir: string, root: string, name: string): Promise<string> {
  const target = join(root, name);
  if (target === dir) return dir;
  await rm(root, { recursive: true, force: true });
  await cp(dir, target, { recursive: true });
  return target;
}
