import { describe, expect, test } from 'vitest';
import { smooth } from '../viewer/smoothing.js';

describe('smooth', () => {
  test("returns TensorBoard's debiased moving average: a constant stays constant from the first point", () => {
    expect(smooth([2, 2, 2, 2], 0.9).map((v) => Number(v!.toFixed(12)))).toStrictEqual([2, 2, 2, 2]);
  });

  test('returns the weighted average of the points so far, gaps kept as gaps', () => {
    // Weight 0.5: after 1 and 3 the average is 0.25*1 + 0.5*3, debiased by 1 - 0.5^2.
    expect(smooth([1, null, 3], 0.5)).toStrictEqual([1, null, (0.25 * 1 + 0.5 * 3) / 0.75]);
    expect(smooth([1, 5], 0)).toStrictEqual([1, 5]);
  });
});
