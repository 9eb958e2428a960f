import { describe, expect, it } from 'vitest';
import { meanPassAtK, passAtK, reportedKs } from './eval-metrics.js';

/** Brute force over all k-subsets, to check the closed form. */
function bruteForce(n: number, c: number, k: number): number {
  let hit = 0;
  let total = 0;
  const visit = (start: number, chosen: number[]): void => {
    if (chosen.length === k) {
      total++;
      if (chosen.some((i) => i < c)) hit++;
      return;
    }
    for (let i = start; i < n; i++) visit(i + 1, [...chosen, i]);
  };
  visit(0, []);
  return hit / total;
}

describe('passAtK', () => {
  it('returns the brute-force probability for every small case', () => {
    for (let n = 1; n <= 6; n++)
      for (let c = 0; c <= n; c++)
        for (let k = 1; k <= n; k++) expect(passAtK(n, c, k)).toBeCloseTo(bruteForce(n, c, k), 12);
  });

  it('returns c/n for k = 1', () => {
    expect(passAtK(10, 3, 1)).toBeCloseTo(0.3, 12);
  });

  it('rejects k larger than n', () => {
    expect(() => passAtK(2, 1, 3)).toThrow(RangeError);
  });

  it('returns the mean over tasks and the k ladder', () => {
    expect(
      meanPassAtK(
        [
          { n: 2, c: 2 },
          { n: 2, c: 0 },
        ],
        1,
      ),
    ).toBe(0.5);
    expect(reportedKs(5)).toStrictEqual([1, 2, 4, 5]);
    expect(reportedKs(1)).toStrictEqual([1]);
  });
});
