import type { Task } from '../datasets/types.js';
import { hash32, shuffled } from '../util/random.js';

/**
 * The tasks of training step `step` (0-based): epochs are seeded shuffles of the split, and step s
 * takes positions [s*k, (s+1)*k) of the endless concatenation of epochs. A pure function of
 * (tasks, seed, step), so `--resume` draws exactly what the interrupted run would have drawn.
 */
export function tasksForStep(tasks: readonly Task[], seed: number, step: number, tasksPerStep: number): Task[] {
  return epochStream(tasks, seed).slice(step * tasksPerStep, (step + 1) * tasksPerStep);
}

/**
 * The endless concatenation of seeded epoch shuffles of `tasks`, read by position: each epoch's order is
 * made once, when a position in it is first read.
 */
export function epochStream(tasks: readonly Task[], seed: number): { slice(from: number, to: number): Task[] } {
  const epochs = new Map<number, Task[]>();
  const at = (position: number): Task => {
    const epoch = Math.floor(position / tasks.length);
    let order = epochs.get(epoch);
    if (!order) {
      order = shuffled(tasks, hash32(seed, 'epoch', epoch));
      epochs.set(epoch, order);
      // A stream is read forward: the orders of epochs before the previous one are not read again.
      for (const old of epochs.keys()) if (old < epoch - 1) epochs.delete(old);
    }
    return order[position % tasks.length]!;
  };
  return {
    slice(from, to) {
      if (tasks.length === 0) return [];
      const out: Task[] = [];
      for (let position = from; position < to; position++) out.push(at(position));
      return out;
    },
  };
}

/** The sampling seed of one episode: distinct per (step, task slot, sample), reproducible on resume. */
export function episodeSeed(seed: number, step: number, slot: number, sample: number): number {
  return hash32(seed, 'episode', step, slot, sample) & 0x7fffffff;
}
