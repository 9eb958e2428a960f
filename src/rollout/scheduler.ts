/**
 * Runs groups of episodes with bounded concurrency. Every group is `groupSize` episodes of one
 * task; episodes of all groups share one pool of `concurrency` slots so a slow group never idles
 * the engine. Results keep their (group, sample) position whatever order they finish in.
 */
export interface EpisodeSlot<T> {
  readonly task: T;
  /** Index of the task (group) within the step. */
  readonly group: number;
  /** Index of the episode within its group. */
  readonly sample: number;
}

/**
 * Runs every slot and returns results by (group, sample). `onError` turns what `runOne` throws into
 * that slot's result, so one episode cannot end the step; should it rethrow (cancellation) or be
 * absent, no further slot starts, the running ones settle, and the first error is thrown.
 */
export async function runGroups<T, R>(
  tasks: readonly T[],
  groupSize: number,
  concurrency: number,
  runOne: (slot: EpisodeSlot<T>) => Promise<R>,
  onDone?: (slot: EpisodeSlot<T>, result: R) => void,
  onError?: (slot: EpisodeSlot<T>, error: unknown) => R,
): Promise<R[][]> {
  const slots: EpisodeSlot<T>[] = tasks.flatMap((task, group) =>
    Array.from({ length: groupSize }, (_, sample) => ({ task, group, sample })),
  );
  const results: R[][] = tasks.map(() => new Array<R>(groupSize));
  let next = 0;
  let stopped = false;
  const settle = async (slot: EpisodeSlot<T>): Promise<R> => {
    try {
      return await runOne(slot);
    } catch (error) {
      if (!onError) throw error;
      return onError(slot, error);
    }
  };
  const worker = async (): Promise<void> => {
    while (!stopped && next < slots.length) {
      const slot = slots[next++]!;
      let result: R;
      try {
        result = await settle(slot);
      } catch (error) {
        stopped = true;
        throw error;
      }
      results[slot.group]![slot.sample] = result;
      onDone?.(slot, result);
    }
  };
  const outcomes = await Promise.allSettled(Array.from({ length: Math.min(concurrency, slots.length) }, worker));
  const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (failed) throw failed.reason;
  return results;
}
