import { describe, expect, test } from 'vitest';
import { policyVersionNow, servedPolicy } from './policy-clock.js';

describe('servedPolicy', () => {
  test('returns the newest version it was advanced to, never an older one, through its clock too', () => {
    const served = servedPolicy(3);
    const clock = served.clock;
    served.advance(5);
    served.advance(4);
    expect([served.version, clock(), policyVersionNow(clock)]).toStrictEqual([5, 5, 5]);
  });
});

describe('policyVersionNow', () => {
  test('returns a fixed version as it is, and reads a function each time', () => {
    let version = 1;
    const clock = (): number => version;
    const before = policyVersionNow(clock);
    version = 2;
    expect([policyVersionNow(7), before, policyVersionNow(clock)]).toStrictEqual([7, 1, 2]);
  });
});
