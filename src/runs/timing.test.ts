import { describe, expect, it } from 'vitest';
import { minutesToGain, runTiming } from './timing.js';

const at = (seconds: number): string => new Date(Date.UTC(2026, 0, 1) + seconds * 1000).toISOString();
const trainLine = (step: number, seconds: number) => ({
  kind: 'train',
  step,
  at: at(seconds),
  time_step_s: 2,
  time_generation_s: 1,
  time_train_s: 0.5,
  time_sync_s: 0.1,
});

describe('runTiming', () => {
  const lines = [
    { kind: 'eval', step: 0, at: at(10), accuracy: 0.25 },
    trainLine(1, 12),
    trainLine(2, 14),
    { kind: 'eval', step: 2, at: at(30), accuracy: 0.4 },
    trainLine(3, 32),
    { kind: 'eval', step: 3, at: at(60), accuracy: 0.46 },
  ];

  it('returns steps per wall-clock minute and the shares of step time', () => {
    const timing = runTiming(lines, at(0));
    expect(timing.steps).toBe(3);
    expect(timing.wallSeconds).toBe(60);
    expect(timing.stepsPerMinute).toBeCloseTo(3);
    expect(timing.stepShares).toEqual({
      generation: 0.5,
      train: 0.25,
      sync: expect.closeTo(0.05),
      overhead: expect.closeTo(0.2),
    });
    expect(timing.outsideStepsShare).toBeCloseTo(0.9);
  });

  it('returns the minutes to the first eval that gained enough, or undefined', () => {
    const timing = runTiming(lines, at(0));
    expect(minutesToGain(timing, 0.2)).toBeCloseTo(1);
    expect(minutesToGain(timing, 0.15)).toBeCloseTo(0.5);
    expect(minutesToGain(timing, 0.3)).toBeUndefined();
  });

  it('throws when no step was timed', () => {
    expect(() => runTiming([{ kind: 'eval', step: 0, at: at(1), accuracy: 0.1 }], at(0))).toThrow(/no train steps/);
  });

  it('returns figures of timed train lines only, wall time from lines with a time, and evals with a time and an accuracy', () => {
    const timing = runTiming(
      [
        { kind: 'eval', step: 0, at: at(6), accuracy: 0.5 },
        { kind: 'eval', step: 0, accuracy: 0.9 }, // no time
        { kind: 'eval', step: 1, at: at(8), reward_mean: 1 }, // no accuracy
        { kind: 'eval', step: 1, at: at(9), accuracy: 0.1, time_step_s: 50 }, // an eval is not a step
        trainLine(1, 12),
        { ...trainLine(2, 100), time_step_s: undefined }, // untimed: not a step, its time still counts
        { ...trainLine(3, 20), accuracy: 0.7 }, // a train line is not an eval
        { kind: 'train', step: 4, time_step_s: 2, time_generation_s: 1, time_train_s: 0.5, time_sync_s: 0.1 }, // no at
      ],
      at(0),
    );
    expect([timing.steps, timing.wallSeconds, timing.evals]).toStrictEqual([
      3,
      100,
      [
        { step: 0, minutes: 0.1, accuracy: 0.5 },
        { step: 1, minutes: 0.15, accuracy: 0.1 },
      ],
    ]);
    expect(timing.outsideStepsShare).toBeCloseTo(0.94);
  });

  it('returns the summed step time as the wall time when no line has a time, and no gain without evals', () => {
    const untimed = { kind: 'train', step: 1, time_step_s: 3, time_generation_s: 2 };
    const timing = runTiming([untimed, { ...untimed, step: 2 }], at(0));
    expect([timing.wallSeconds, timing.stepsPerMinute, timing.outsideStepsShare, timing.evals]).toStrictEqual([
      6,
      20,
      0,
      [],
    ]);
    expect(minutesToGain(timing, 0)).toBeUndefined();
  });
});
