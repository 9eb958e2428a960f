import { describe, expect, test } from 'vitest';
import { formatStall, StallWatch } from './stall-watch.js';

/** A watch on a clock the test moves. */
function watched(): { watch: StallWatch; advance: (ms: number) => void } {
  let now = 0;
  return { watch: new StallWatch({ factor: 3, minMs: 1_000, now: () => now }), advance: (ms) => (now += ms) };
}

describe('StallWatch', () => {
  test('returns nothing before a step has finished, nor while the step is within factor x median', () => {
    const { watch, advance } = watched();
    watch.stepStarted(1);
    advance(60_000);
    expect(watch.check()).toBeUndefined();
    watch.stepFinished();
    watch.stepStarted(2);
    advance(179_000);
    expect(watch.check()).toBeUndefined();
  });

  test('leaves a step that trained nothing out of the median, so the next normal step is no stall', () => {
    const { watch, advance } = watched();
    watch.stepStarted(1);
    advance(60_000);
    watch.stepFinished();
    watch.stepStarted(2);
    advance(20); // no group had a learning signal: nothing trained
    watch.stepFinished(false);
    watch.stepStarted(3);
    advance(100_000);
    expect(watch.check()).toBeUndefined(); // 100 s: within 3 x 60 s (counting the empty step, 3 x 30 s was past)
    advance(100_000);
    expect(watch.check()?.medianMs).toBe(60_000);
  });

  test('returns the open waits, longest first, with what was last heard from each component', async () => {
    const { watch, advance } = watched();
    for (const ms of [10_000, 12_000, 11_000]) {
      watch.stepStarted(0);
      advance(ms);
      watch.stepFinished();
    }
    watch.stepStarted(4);
    await watch.wait('trainer', 'train step 3', async () => advance(2_000));
    await expect(
      watch.wait('engine', 'generate (812 prompt tokens)', async () => {
        advance(1_000);
        throw new Error('connection reset');
      }),
    ).rejects.toThrow('connection reset');
    let release!: () => void;
    const hung = watch.wait('trainer', 'train step 4', () => new Promise<void>((r) => (release = r)));
    advance(5_000);
    const generating = watch.wait('engine', 'generate (900 prompt tokens)', () => new Promise<void>(() => undefined));
    advance(30_000);
    expect(watch.check()).toStrictEqual({
      step: 4,
      elapsedMs: 38_000,
      medianMs: 11_000,
      waits: [
        {
          component: 'trainer',
          detail: 'train step 4',
          forMs: 35_000,
          lastHeard: { what: 'train step 3: answered', agoMs: 36_000 },
        },
        {
          component: 'engine',
          detail: 'generate (900 prompt tokens)',
          forMs: 30_000,
          lastHeard: { what: 'generate (812 prompt tokens): connection reset', agoMs: 35_000 },
        },
      ],
    });
    release();
    await hung;
    void generating;
  });

  test('returns the next report only at twice the elapsed time of the last, and none after the step ends', () => {
    const { watch, advance } = watched();
    watch.stepStarted(1);
    advance(10_000);
    watch.stepFinished();
    watch.stepStarted(2);
    advance(31_000);
    expect(watch.check()?.elapsedMs).toBe(31_000);
    advance(30_000);
    expect(watch.check()).toBeUndefined();
    advance(1_000);
    expect(watch.check()?.elapsedMs).toBe(62_000);
    watch.stepFinished();
    expect(watch.check()).toBeUndefined();
  });

  test('returns one line naming the component, how long, and what was last heard', () => {
    expect(
      formatStall({
        step: 7,
        elapsedMs: 312_000,
        medianMs: 60_000,
        waits: [
          {
            component: 'weight sync',
            detail: 'sync policy 7',
            forMs: 290_400,
            lastHeard: { what: 'sync policy 6: answered', agoMs: 350_000 },
          },
          { component: 'engine', detail: 'generate', forMs: 1_000 },
        ],
      }),
    ).toBe(
      'stall: step 7 has run 312 s, 5.2x its median of 60 s; waiting on weight sync for 290 s (sync policy 7), last heard 350 s ago: sync policy 6: answered; waiting on engine for 1 s (generate), nothing heard from it yet',
    );
    expect(formatStall({ step: 2, elapsedMs: 90_000, medianMs: 20_000, waits: [] })).toBe(
      'stall: step 2 has run 90 s, 4.5x its median of 20 s; no wait is open (the run loop itself is busy)',
    );
  });

  test('an evaluation is stalled when no episode has finished for factor x its median episode', async () => {
    const { watch, advance } = watched();
    watch.evalStarted('step-00010', 5);
    for (const ms of [4_000, 6_000, 5_000]) {
      advance(ms);
      watch.evalEpisodeFinished(ms);
    }
    const hung = watch.wait('engine', 'generate from 300 prompt tokens', () => new Promise<void>(() => undefined));
    advance(14_999);
    expect(watch.checkEval()).toBeUndefined();
    advance(1);
    expect(watch.checkEval()).toStrictEqual({
      label: 'step-00010',
      silentMs: 15_000,
      done: 3,
      total: 5,
      medianEpisodeMs: 5_000,
      waits: [{ component: 'engine', detail: 'generate from 300 prompt tokens', forMs: 15_000 }],
    });
    expect(watch.checkEval()).toBeUndefined(); // the next only at twice the silence
    advance(15_000);
    expect(watch.checkEval()?.silentMs).toBe(30_000);
    watch.evalEpisodeFinished(5_000); // progress resets the silence and the backoff
    advance(14_000);
    expect(watch.checkEval()).toBeUndefined();
    watch.evalFinished();
    advance(100_000);
    expect(watch.checkEval()).toBeUndefined();
    void hung;
  });

  test('before its first episode finishes, an evaluation waits 10 x minMs or factor x the median step', () => {
    const { watch, advance } = watched();
    watch.evalStarted('step-00000', 2);
    advance(9_999);
    expect(watch.checkEval()).toBeUndefined();
    advance(1);
    expect(watch.checkEval()).toMatchObject({ silentMs: 10_000, done: 0, medianEpisodeMs: undefined });
    for (const ms of [20_000, 20_000]) {
      watch.stepStarted(1);
      advance(ms);
      watch.stepFinished();
    }
    watch.evalStarted('step-00002', 2);
    advance(59_999);
    expect(watch.checkEval()).toBeUndefined();
    advance(1);
    expect(formatStall(watch.checkEval()!)).toBe(
      'stall: eval step-00002 has had no episode finish for 60 s (0 of 2 done); no wait is open (the run loop itself is busy)',
    );
  });

  test("an eval's line names its progress and its median episode", () => {
    expect(
      formatStall({
        label: 'step-00004',
        silentMs: 95_000,
        done: 12,
        total: 40,
        medianEpisodeMs: 20_400,
        waits: [{ component: 'user', detail: 'user turn of task 7', forMs: 94_000 }],
      }),
    ).toBe(
      'stall: eval step-00004 has had no episode finish for 95 s (12 of 40 done; an episode takes 20 s at the median); waiting on user for 94 s (user turn of task 7), nothing heard from it yet',
    );
  });
});
