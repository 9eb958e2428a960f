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
});
