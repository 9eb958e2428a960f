import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, test } from 'vitest';
import { stepCollector, type EpisodeGate, type StepCollectorOptions } from './async-collector.js';
import type { Rollout } from './collect.js';

/** A step of `episodes` episodes, each waiting `ms` (or until aborted), logging when each step's episodes start. */
function steps(episodes: number, ms: number, log: string[]) {
  return (step: number, gate: EpisodeGate): Promise<Rollout[][]> =>
    Promise.all(
      Array.from({ length: episodes }, (_, i) =>
        gate(async (signal) => {
          log.push(`start ${step}.${i}`);
          await sleep(ms, undefined, { signal });
          return { group: 0, sample: i } as unknown as Rollout;
        }),
      ),
    ).then((rollouts) => [rollouts]);
}

/** A step collector over `collect` (a run signal of its own unless given). */
function collectorOf(
  collect: StepCollectorOptions['collect'],
  maxStaleness: number,
  lastStep: number,
  concurrency: number,
  signal = new AbortController().signal,
) {
  return stepCollector({ collect, maxStaleness, lastStep, concurrency, signal });
}

describe('stepCollector', () => {
  test('returns each step when taken and collects nothing ahead at max_staleness 0', async () => {
    const log: string[] = [];
    const collector = collectorOf(steps(2, 5, log), 0, 3, 4);
    expect((await collector.take(1))[0]!.length).toBe(2);
    collector.runAhead(1);
    await sleep(20);
    expect(log).toStrictEqual(['start 1.0', 'start 1.1']);
    expect(await collector.close()).toBe(0);
  });

  test('returns a step begun before it is taken, at max_staleness 0, collected once', async () => {
    const log: string[] = [];
    const collector = collectorOf(steps(2, 5, log), 0, 3, 4);
    collector.begin(1);
    await sleep(1);
    expect(log).toStrictEqual(['start 1.0', 'start 1.1']); // before anyone takes it
    expect((await collector.take(1))[0]!.length).toBe(2);
    expect(log).toStrictEqual(['start 1.0', 'start 1.1']);
    collector.begin(4); // past the last step: nothing starts
    expect(await collector.close()).toBe(0);
  });

  test('returns episodes of shared work run within the same slots as a begun step', async () => {
    const log: string[] = [];
    let running = 0;
    let most = 0;
    const episode = (name: string) => async (signal: AbortSignal) => {
      log.push(`start ${name}`);
      most = Math.max(most, ++running);
      await sleep(10, undefined, { signal });
      running--;
      return { group: 0, sample: 0 } as unknown as Rollout;
    };
    const collector = collectorOf(
      async (step, gate) => [await Promise.all([0, 1].map((i) => gate(episode(`${step}.${i}`))))],
      0,
      1,
      2,
    );
    collector.begin(1);
    await Promise.all([collector.share(episode('eval.0')), collector.share(episode('eval.1')), collector.take(1)]);
    // Two slots: the eval's episodes waited for the step's, never four at once.
    expect(log).toStrictEqual(['start 1.0', 'start 1.1', 'start eval.0', 'start eval.1']);
    expect(most).toBe(2);
    expect(await collector.close()).toBe(0);
  });

  test('returns steps collected ahead up to max_staleness, never past the last step, within one pool of slots in step order', async () => {
    const log: string[] = [];
    const collector = collectorOf(steps(2, 10, log), 2, 3, 2);
    await collector.take(1);
    collector.runAhead(1);
    collector.runAhead(1); // idempotent: a step runs ahead once
    await collector.take(2);
    collector.runAhead(2);
    await collector.take(3);
    // Two slots: step 2's episodes start before step 3's, and step 4 never starts.
    expect(log).toStrictEqual(['start 1.0', 'start 1.1', 'start 2.0', 'start 2.1', 'start 3.0', 'start 3.1']);
    expect(collector.activity().busySeconds).toBeGreaterThan(0.02);
    expect(await collector.close()).toBe(0);
  });

  test('returns the count of episodes started for steps never taken, aborting those in flight, on close', async () => {
    const log: string[] = [];
    const collector = collectorOf(steps(3, 60_000, log), 1, 5, 2);
    collector.runAhead(0);
    await sleep(20);
    const started = performance.now();
    // Two in flight (the pool has two slots), the third never started.
    expect(await collector.close()).toBe(2);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(log).toStrictEqual(['start 1.0', 'start 1.1']);
  });

  test('rejects take once the run is aborted', async () => {
    const run = new AbortController();
    const collector = collectorOf(steps(1, 60_000, []), 0, 1, 1, run.signal);
    const taken = collector.take(1);
    run.abort(new Error('interrupted'));
    await expect(taken).rejects.toBeInstanceOf(Error);
    await collector.close();
  });
});
