import { describe, expect, test } from 'vitest';
import { overlongPenalty } from './overlong.js';

describe('overlongPenalty', () => {
  test('returns 0 before the buffer, the linear ramp inside it and -1 past max_tokens (DAPO eq. 13)', () => {
    const config = { max_tokens: 100, buffer: 20 };
    // L_max - L_cache = 80: ((80 - |y|) / 20) inside (80, 100], -1 beyond.
    expect([0, 79, 80, 81, 90, 99, 100, 101, 500].map((n) => overlongPenalty(config, n))).toStrictEqual([
      0, 0, 0, -0.05, -0.5, -0.95, -1, -1, -1,
    ]);
  });

  test('returns the ramp over the whole budget when the buffer is max_tokens', () => {
    expect([0, 1, 5, 10, 11].map((n) => overlongPenalty({ max_tokens: 10, buffer: 10 }, n))).toStrictEqual([
      0, -0.1, -0.5, -1, -1,
    ]);
  });
});
