/**
 * Watching the processes a cluster launcher placed: a lost node or step (the process ended, or it stopped
 * answering its heartbeats) fails the trainer call or weight sync it happens in, naming node and component.
 */
import type { ProviderError } from '../errors/index.js';
import { guardPolicy, type GuardablePolicy, type PlacedListener } from '../policy/index.js';
import type { ClusterConfig } from '../recipe/cluster-schema.js';
import type { Allocation } from './allocation.js';
import type { Placement } from './placement.js';

/** A placed process atk watches: it must not end before the run does. */
export interface PlacedProcess {
  /** `trainer` or `engine replica <i>`. */
  readonly component: string;
  readonly node: string;
  readonly logFile: string;
  readonly exited: Promise<number | null>;
}

/** What the guard asks of a cluster launch: the placement, and the processes it watches. */
export interface WatchedPlacement {
  readonly allocation: Allocation;
  readonly placement: Placement;
  /** Remembers processes whose end before close() is a lost node or step. */
  watch(processes: readonly PlacedProcess[]): void;
  /** The first watched process that ended before close(), as the error that fails the step. */
  failure(): ProviderError | undefined;
  /** Where `node` is, for messages: `node n2 (slurm job 7)` or `host gpu3`. */
  where(node: string): string;
}

/**
 * Watches the placed trainer and engine replicas and makes every trainer call and weight sync fail
 * with the named loss (component, node, log) once one of them has ended: a lost node or step fails the
 * step it happens in rather than leaving atk waiting. The placement goes into the run manifest's facts.
 */
export function guardPlacedPolicy<P extends GuardablePolicy>(
  policy: P,
  cluster: WatchedPlacement,
  trainer: Listening,
  engines: readonly Listening[],
  heartbeat: Pick<ClusterConfig, 'heartbeat_interval_s' | 'heartbeat_misses'>,
): P {
  const { placement } = cluster;
  cluster.watch([
    { component: 'trainer', node: placement.trainerNodes[0]!, ...pick(trainer) },
    ...engines.map((p, i) => ({
      component: `engine replica ${i}`,
      node: placement.engineReplicas[i]?.node ?? '?',
      ...pick(p),
    })),
  ]);
  // Between calls too (the rollout phase): a lost process, or one that stopped answering, fails the step.
  const guarded = guardPolicy(policy, {
    failure: () => cluster.failure(),
    intervalS: heartbeat.heartbeat_interval_s,
    misses: heartbeat.heartbeat_misses,
    hint: 'the node hangs, its process is stopped or the network to it is cut; atk run --resume continues from the last checkpoint, also on a new allocation',
    graceMs: 5000,
    heartbeats: [
      {
        component: 'trainer',
        where: cluster.where(placement.trainerNodes[0]!),
        url: trainer.baseUrl,
        path: '/control/health',
      },
      ...engines.map((p, i) => ({
        component: `engine replica ${i}`,
        where: cluster.where(placement.engineReplicas[i]?.node ?? '?'),
        url: p.baseUrl,
        path: '/health',
      })),
    ],
  });
  return {
    ...guarded,
    facts: {
      ...policy.facts,
      cluster: cluster.allocation.launcher,
      trainer_nodes: placement.trainerNodes,
      engine_nodes: placement.engineReplicas.map((r) => r.node),
    },
  };
}

/** A placed process with the base URL its heartbeats go to. */
type Listening = PlacedListener;

function pick(p: Pick<PlacedProcess, 'logFile' | 'exited'>): Pick<PlacedProcess, 'logFile' | 'exited'> {
  return { logFile: p.logFile, exited: p.exited };
}
