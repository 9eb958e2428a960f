import { describe, expect, it } from 'vitest';
import { runGroups } from './scheduler.js';

describe('runGroups', () => {
  it('returns results in group order and never exceeds the concurrency', async () => {
    let inFlight = 0;
    let peak = 0;
    const results = await runGroups(['a', 'b', 'c'], 4, 3, async ({ task, sample }) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await new Promise((r) => setTimeout(r, (sample * 7) % 5));
      inFlight--;
      return `${task}${sample}`;
    });
    expect(results).toStrictEqual([
      ['a0', 'a1', 'a2', 'a3'],
      ['b0', 'b1', 'b2', 'b3'],
      ['c0', 'c1', 'c2', 'c3'],
    ]);
    expect(peak).toBe(3);
  });

  it('returns what onError makes of an episode that throws as its result, and runs every other episode', async () => {
    const done: string[] = [];
    const results = await runGroups(
      ['a', 'b'],
      2,
      2,
      async ({ task, sample }) => {
        if (task === 'a' && sample === 1) throw new Error('tool crashed');
        return `${task}${sample}`;
      },
      (slot, result) => done.push(`${slot.group}/${slot.sample}=${result}`),
      (slot, error) => `failed ${slot.task}${slot.sample}: ${(error as Error).message}`,
    );
    expect(results).toStrictEqual([
      ['a0', 'failed a1: tool crashed'],
      ['b0', 'b1'],
    ]);
    expect(done.sort()).toStrictEqual(['0/0=a0', '0/1=failed a1: tool crashed', '1/0=b0', '1/1=b1']);
  });

  it('throws the first error when onError is absent or rethrows, starting no further episode once the running ones settle', async () => {
    for (const onError of [
      undefined,
      (_: unknown, error: unknown): string => {
        throw error;
      },
    ]) {
      const started: string[] = [];
      const settled: string[] = [];
      const run = runGroups(
        ['a', 'b', 'c'],
        1,
        2,
        async ({ task }) => {
          started.push(task);
          if (task !== 'a') throw new Error(`${task} failed`);
          // Still running when 'b' fails: it finishes, and no worker takes 'c' after it.
          await new Promise((r) => setTimeout(r, 10));
          settled.push(task);
          return task;
        },
        undefined,
        onError,
      );
      const message = await run.then(
        () => 'resolved',
        (error: Error) => error.message,
      );
      expect([message, started, settled]).toStrictEqual(['b failed', ['a', 'b'], ['a']]);
    }
  });

  it('returns empty groups for no tasks', async () => {
    expect(await runGroups([], 4, 8, async () => 1)).toStrictEqual([]);
  });
});
