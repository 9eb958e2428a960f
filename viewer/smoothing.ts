/**
 * TensorBoard's smoothing: an exponential moving average with weight `weight` in [0, 1), debiased
 * so that the first points are not pulled towards zero. Gaps (null) stay gaps and do not reset it.
 */
export function smooth(values: readonly (number | null)[], weight: number): (number | null)[] {
  if (weight <= 0) return [...values];
  let last = 0;
  let count = 0;
  return values.map((v) => {
    if (v === null || !Number.isFinite(v)) return null;
    last = last * weight + (1 - weight) * v;
    count++;
    return last / (1 - weight ** count);
  });
}
