// The episodes of the tito-episodes bench, run by the main thread or a worker: the same task for an id
// either way, and what each episode produced, to check the two paths give identical results.
import type { Task } from '../../src/datasets/types.js';
import type { EpisodeResult } from '../../src/rollout/episode.js';

export interface EpisodeOutcome {
  readonly id: number;
  readonly finishReason: string;
  readonly toolCalls: number;
  readonly messages: string;
  readonly tokenIds: readonly number[];
  readonly mask: readonly number[];
  readonly logprobs: readonly (number | null)[];
}

export function benchTask(id: number): Task {
  return { id: `e${id}`, prompt: `What is 2+3? (#${id})`, data: {} };
}

/** Runs the episodes of `ids` concurrently; throws unless each made its 3 tool calls. */
export async function episodeBatch(
  ids: readonly number[],
  run: (task: Task) => Promise<EpisodeResult>,
): Promise<EpisodeOutcome[]> {
  const results = await Promise.all(ids.map((id) => run(benchTask(id))));
  const failed = results.filter((r) => r.error || r.stats.toolCalls !== 3);
  if (failed.length)
    throw new Error(`${failed.length} episodes failed: ${failed[0]!.error ?? failed[0]!.finishReason}`);
  return results.map((r, i) => ({
    id: ids[i]!,
    finishReason: r.finishReason,
    toolCalls: r.stats.toolCalls,
    messages: JSON.stringify(r.messages),
    tokenIds: r.trajectory.ids,
    mask: r.trajectory.mask(),
    logprobs: r.trajectory.logprobsFull(),
  }));
}
