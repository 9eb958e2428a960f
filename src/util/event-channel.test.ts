import { describe, expect, it } from 'vitest';
import { EventChannel } from './event-channel.js';

describe('EventChannel', () => {
  it('returns every pushed event in order, then the work result', async () => {
    const channel = new EventChannel<number>();
    const work = (async () => {
      for (let i = 0; i < 5; i++) {
        await new Promise((r) => setTimeout(r, 1));
        channel.push(i);
      }
      channel.push(99);
      return 'done';
    })();
    const seen: number[] = [];
    const iterator = channel.drainUntil(work);
    let next = await iterator.next();
    while (!next.done) {
      seen.push(next.value);
      next = await iterator.next();
    }
    expect(seen).toStrictEqual([0, 1, 2, 3, 4, 99]);
    expect(next.value).toBe('done');
  });

  it('rejects with the work error after draining', async () => {
    const channel = new EventChannel<number>();
    const work = (async () => {
      channel.push(1);
      throw new Error('boom');
    })();
    const seen: number[] = [];
    await expect(
      (async () => {
        for await (const e of channel.drainUntil(work)) seen.push(e);
      })(),
    ).rejects.toThrow('boom');
    expect(seen).toStrictEqual([1]);
  });
});
