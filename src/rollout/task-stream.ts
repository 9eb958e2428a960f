import type { Task } from '../datasets/types.js';
import { hash32, shuffled } from '../util/random.js';

/**
 * The tasks of training step `step` (0-based): epochs are seeded shuffles of the split, and step s
 * takes positions [s*k, (s+1)*k) of the endless concatenation of epochs. A pure function of
 * (tasks, seed, step), so `--resume` draws exactly what the interrupted run would have drawn.
 */
export function tasksForStep(tasks: readonly Task[], seed: number, step: number, tasksPerStep: number): Task[] {
  if (tasks.length === 0) return [];
  const out: Task[] = [];
  const epochs = new Map<number, Task[]>();
  for (let position = step * tasksPerStep; position < (step + 1) * tasksPerStep; position++) {
    const epoch = Math.floor(position / tasks.length);
    let order = epochs.get(epoch);
    if (!order) {
      order = shuffled(tasks, hash32(seed, 'epoch', epoch));
      epochs.set(epoch, order);
    }
    out.push(order[position % tasks.length]!);
  }
  return out;
}

/** The sampling seed of one episode: distinct per (step, task slot, sample), reproducible on resume. */
export function episodeSeed(seed: number, step: number, slot: number, sample: number): number {
  return hash32(seed, 'episode', step, slot, sample) & 0x7fffffff;
}
