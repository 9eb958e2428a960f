/** Placing the trainer and engine replicas on a Slurm allocation or a host list. */
export { expandHostlist } from './hostlist.js';
export { slurmGpusPerNode, type Allocation } from './allocation.js';
export { readAllocation } from './launchers.js';
export {
  describePlacement,
  placementDemand,
  planPlacement,
  staticPlacementProblems,
  type Placement,
  type PlacementDemand,
  type PlacementProblem,
} from './placement.js';
export { checkClusterPlacement } from './recipe-check.js';
