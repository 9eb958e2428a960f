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

export async function runGroups<T, R>(
  tasks: readonly T[],
  groupSize: number,
  concurrency: number,
  runOne: (slot: EpisodeSlot<T>) => Promise<R>,
  onDone?: (slot: EpisodeSlot<T>, result: R) => void,
): Promise<R[][]> {
  const slots: EpisodeSlot<T>[] = tasks.flatMap((task, group) =>
    Array.from({ length: groupSize }, (_, sample) => ({ task, group, sample })),
  );
  const results: R[][] = tasks.map(() => new Array<R>(groupSize));
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < slots.length) {
      const slot = slots[next++]!;
      const result = await runOne(slot);
      results[slot.group]![slot.sample] = result;
      onDone?.(slot, result);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, slots.length) }, worker));
  return results;
}
