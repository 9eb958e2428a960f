import { describe, expect, it } from 'vitest';
import { episodeSeed, tasksForStep } from './task-stream.js';

const tasks = Array.from({ length: 10 }, (_, i) => ({ id: `t${i}`, prompt: `p${i}`, data: {} }));
const five = tasks.slice(0, 5);

/** Task ids of `epochs` epochs of `split`, one step per epoch. */
function epochs(split: typeof tasks, seed: number, count: number): string[][] {
  return Array.from({ length: count }, (_, e) => tasksForStep(split, seed, e, split.length).map((t) => t.id));
}

describe('tasksForStep', () => {
  it('returns the recorded order of the first two epochs for seeds 0 and 1', () => {
    // Golden: a change here reorders every run's task stream (and what a resumed run draws).
    expect(epochs(five, 0, 2)).toStrictEqual([
      ['t2', 't0', 't1', 't4', 't3'],
      ['t0', 't2', 't4', 't1', 't3'],
    ]);
    expect(epochs(five, 1, 2)).toStrictEqual([
      ['t2', 't3', 't0', 't1', 't4'],
      ['t1', 't0', 't3', 't2', 't4'],
    ]);
  });

  it('returns a step across an epoch boundary from the end of one epoch and the start of the next', () => {
    const steps = [0, 1, 2, 3, 4].map((s) => tasksForStep(five, 0, s, 2).map((t) => t.id));
    expect(steps).toStrictEqual([
      ['t2', 't0'],
      ['t1', 't4'],
      ['t3', 't0'],
      ['t2', 't4'],
      ['t1', 't3'],
    ]);
  });

  it('returns every task once per epoch, in a new order each epoch', () => {
    for (const seed of [0, 1, 7]) {
      const orders = epochs(tasks, seed, 4);
      for (const order of orders) expect([...order].sort()).toStrictEqual(tasks.map((t) => t.id).sort());
      expect(new Set(orders.map((o) => o.join())).size).toBe(4);
    }
  });

  it('returns a different order for a different seed', () => {
    expect(epochs(tasks, 1, 2)).not.toStrictEqual(epochs(tasks, 2, 2));
  });

  it('returns no tasks from an empty split', () => {
    expect(tasksForStep([], 0, 3, 4)).toStrictEqual([]);
  });

  it('returns the recorded episode seeds, distinct per sample, step and slot', () => {
    // Golden: a change here resamples every episode of every run (and of a resumed one).
    expect([0, 1, 2, 3].map((i) => episodeSeed(0, 5, 1, i))).toStrictEqual([
      676535942, 693313561, 642980704, 659758323,
    ]);
    expect([episodeSeed(3, 0, 0, 0), episodeSeed(3, 1, 0, 0), episodeSeed(3, 0, 1, 0)]).toStrictEqual([
      2050925891, 434814240, 458735512,
    ]);
  });
});
