import type { Task } from '../datasets/types.js';
import type { EpisodeRequest } from '../rollout/collect.js';

/** The request for one episode of `task` in tests: the first sample of group 0, seed 1, plain sampling at temperature 1, policy 0. */
export function firstSampleRequest(task: Task): EpisodeRequest {
  return { task, group: 0, sample: 0, seed: 1, temperature: 1, topP: 1, topK: -1, policyVersion: 0 };
}
