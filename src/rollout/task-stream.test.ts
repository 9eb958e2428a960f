import { describe, expect, it } from 'vitest';
import { episodeSeed, tasksForStep } from './task-stream.js';

const tasks = Array.from({ length: 10 }, (_, i) => ({ id: `t${i}`, prompt: `p${i}`, data: {} }));

describe('tasksForStep', () => {
  it('returns the same tasks for the same seed and step', () => {
    expect(tasksForStep(tasks, 7, 3, 4).map((t) => t.id)).toStrictEqual(tasksForStep(tasks, 7, 3, 4).map((t) => t.id));
  });

  it('returns every task once per epoch', () => {
    const epoch = [0, 1, 2, 3, 4].flatMap((s) => tasksForStep(tasks, 1, s, 2).map((t) => t.id));
    expect(new Set(epoch).size).toBe(10);
  });

  it('returns a different order for a different seed', () => {
    const a = [0, 1].flatMap((s) => tasksForStep(tasks, 1, s, 5).map((t) => t.id));
    const b = [0, 1].flatMap((s) => tasksForStep(tasks, 2, s, 5).map((t) => t.id));
    expect(a).not.toStrictEqual(b);
  });

  it('returns distinct episode seeds per sample', () => {
    const seeds = new Set([0, 1, 2, 3].map((i) => episodeSeed(0, 5, 1, i)));
    expect(seeds.size).toBe(4);
  });
});
