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

  it('returns empty groups for no tasks', async () => {
    expect(await runGroups([], 4, 8, async () => 1)).toStrictEqual([]);
  });
});
