/**
 * Which node runs what: the trainer on the first `model.trainer.nodes` nodes of the allocation, the
 * engine replicas spread over the next `model.engine.nodes` (one node per replica by default). The
 * same plan is checked by `atk validate` and followed by the launchers, so what validates is what runs.
 */
import { engineKindOf } from '../policy/index.js';
import type { ResolvedRecipe } from '../recipe/resolve.js';
import type { Allocation } from './allocation.js';

/** The parts of a recipe placement reads. */
export type PlacementRecipe = Pick<ResolvedRecipe, 'cluster'> & {
  readonly model: Pick<ResolvedRecipe['model'], 'engine' | 'trainer'>;
};

/** Nodes for each process atk starts. */
export interface Placement {
  readonly trainerNodes: readonly string[];
  /** One entry per launched engine replica (none for embedded and url engines). */
  readonly engineReplicas: readonly { readonly replica: number; readonly node: string }[];
}

/** What the recipe asks of an allocation. */
export interface PlacementDemand {
  readonly trainerNodes: number;
  /** Nodes holding launched engine replicas (0 for embedded and url engines). */
  readonly engineNodes: number;
  readonly replicas: number;
  /** Most replicas sharing one engine node. */
  readonly replicasPerNode: number;
  /** GPUs each engine node needs (replicasPerNode x gpus_per_replica); undefined when not given. */
  readonly engineGpusPerNode: number | undefined;
}

/** One unmet need: a dotted key path and a one-line message (a RecipeProblem). */
export interface PlacementProblem {
  readonly path: string;
  readonly message: string;
}

/** The nodes and GPUs the recipe needs. */
export function placementDemand(recipe: PlacementRecipe): PlacementDemand {
  const { engine, trainer } = recipe.model;
  const launched = engineKindOf(engine).launched;
  const replicas = launched ? engine.replicas : 0;
  const engineNodes = launched ? Math.min(engine.nodes ?? replicas, replicas) : 0;
  const replicasPerNode = engineNodes ? Math.ceil(replicas / engineNodes) : 0;
  return {
    trainerNodes: trainer.nodes,
    engineNodes,
    replicas,
    replicasPerNode,
    engineGpusPerNode: engine.gpus_per_replica === undefined ? undefined : replicasPerNode * engine.gpus_per_replica,
  };
}

/**
 * Places the recipe's processes on the allocation, or says everything that does not fit: too few
 * nodes (how many are missing), too few GPUs per node, replicas or trainer nodes on a local launcher.
 */
export function planPlacement(
  recipe: PlacementRecipe,
  allocation: Allocation,
): { placement?: Placement; problems: PlacementProblem[] } {
  const demand = placementDemand(recipe);
  const problems = staticPlacementProblems(recipe);
  if (allocation.launcher === 'local')
    return problems.length
      ? { problems }
      : { placement: { trainerNodes: ['localhost'], engineReplicas: [] }, problems };
  const needed = demand.trainerNodes + demand.engineNodes;
  const have = allocation.nodes.length;
  if (needed > have) {
    const engines = demand.engineNodes
      ? ` + model.engine.nodes ${demand.engineNodes} for ${demand.replicas} engine replica${demand.replicas > 1 ? 's' : ''}`
      : '';
    problems.push({
      path: allocation.launcher === 'hosts' ? 'cluster.hosts' : 'cluster.launcher',
      message: `needs ${needed} nodes (model.trainer.nodes ${demand.trainerNodes}${engines}); the allocation (${allocation.source}: ${allocation.nodes.join(', ') || 'none'}) has ${have}: ${needed - have} missing`,
    });
  }
  if (demand.engineGpusPerNode && (allocation.gpusPerNode ?? 0) < demand.engineGpusPerNode) {
    const has =
      allocation.gpusPerNode === undefined
        ? 'reports no GPUs (request them, e.g. sbatch --gpus-per-node)'
        : `has ${allocation.gpusPerNode} per node`;
    problems.push({
      path: 'model.engine.gpus_per_replica',
      message: `each engine node needs ${demand.engineGpusPerNode} GPUs (${demand.replicasPerNode} replica${demand.replicasPerNode > 1 ? 's' : ''} x ${recipe.model.engine.gpus_per_replica}); the allocation ${has}`,
    });
  }
  if (problems.length) return { problems };
  const trainerNodes = allocation.nodes.slice(0, demand.trainerNodes);
  const engineNodes = allocation.nodes.slice(demand.trainerNodes, demand.trainerNodes + demand.engineNodes);
  const engineReplicas = Array.from({ length: demand.replicas }, (_, replica) => ({
    replica,
    node: engineNodes[Math.floor(replica / demand.replicasPerNode)]!,
  }));
  return { placement: { trainerNodes, engineReplicas }, problems };
}

/** What the recipe gets wrong whatever the allocation. */
export function staticPlacementProblems(recipe: PlacementRecipe): PlacementProblem[] {
  const { cluster } = recipe;
  const { engine, trainer } = recipe.model;
  const problems: PlacementProblem[] = [];
  if (cluster.launcher === 'local') {
    if (trainer.nodes > 1)
      problems.push({
        path: 'model.trainer.nodes',
        message: `${trainer.nodes} nodes need cluster.launcher slurm or hosts; local is one machine`,
      });
    if (engine.nodes !== undefined)
      problems.push({
        path: 'model.engine.nodes',
        message: 'placing replicas on nodes needs cluster.launcher slurm or hosts; local is one machine',
      });
    return problems;
  }
  if (cluster.auth === 'none') {
    problems.push({
      path: 'cluster.auth',
      message: `${cluster.launcher} puts listeners off loopback; they must require the per-run token (auth: token)`,
    });
  }
  if (cluster.launcher === 'hosts') {
    if (!cluster.hosts?.length)
      problems.push({ path: 'cluster.hosts', message: 'launcher hosts needs the list of hosts' });
    if (!cluster.command.some((part) => part.includes('{host}')))
      problems.push({ path: 'cluster.command', message: 'must contain {host} (e.g. [ssh, "{host}"])' });
    if (trainer.nodes > 1)
      problems.push({
        path: 'model.trainer.nodes',
        message: `${trainer.nodes} nodes: a trainer across nodes is started on slurm only (one srun step, one torchrun per node)`,
      });
  }
  if (engine.nodes !== undefined && engineKindOf(engine).launched && engine.nodes > engine.replicas) {
    problems.push({
      path: 'model.engine.nodes',
      message: `${engine.nodes} nodes for ${engine.replicas} replica${engine.replicas > 1 ? 's' : ''}: a node would have none`,
    });
  }
  return problems;
}

/** One line for `atk validate`: where each process goes, or what the recipe needs when atk is not inside an allocation. */
export function describePlacement(recipe: PlacementRecipe, allocation: Allocation | undefined): string {
  const demand = placementDemand(recipe);
  const launcher = recipe.cluster.launcher;
  if (!allocation) {
    return `cluster ${launcher}: not inside an allocation; needs ${demand.trainerNodes + demand.engineNodes} nodes (trainer ${demand.trainerNodes}, engines ${demand.engineNodes})`;
  }
  const { placement } = planPlacement(recipe, allocation);
  if (!placement) return `cluster ${launcher}: does not fit ${allocation.source}`;
  const engines = placement.engineReplicas.map((r) => `replica ${r.replica} on ${r.node}`).join(', ');
  return `cluster ${launcher}: trainer on ${placement.trainerNodes.join(', ')}${engines ? `; engine ${engines}` : ''}`;
}
