/**
 * Unbiased pass@k (Chen et al. 2021): the probability that at least one of k samples drawn
 * without replacement from n samples, c of them correct, is correct: 1 - C(n-c, k) / C(n, k).
 * Computed as a running product to stay exact for large n.
 */
export function passAtK(n: number, c: number, k: number): number {
  if (k > n) throw new RangeError(`pass@${k} needs at least ${k} samples, got ${n}`);
  if (n - c < k) return 1;
  let allWrong = 1;
  for (let i = n - c + 1; i <= n; i++) allWrong *= 1 - k / i;
  return 1 - allWrong;
}

/** The k values worth reporting for n samples per task: 1, 2, 4, ... up to n, and n itself. */
export function reportedKs(n: number): number[] {
  const ks: number[] = [];
  for (let k = 1; k <= n; k *= 2) ks.push(k);
  if (ks[ks.length - 1] !== n) ks.push(n);
  return ks;
}

/** Mean over tasks of pass@k, given per task the number of samples and of successes. */
export function meanPassAtK(perTask: readonly { n: number; c: number }[], k: number): number {
  if (perTask.length === 0) return 0;
  return perTask.reduce((sum, t) => sum + passAtK(t.n, t.c, k), 0) / perTask.length;
}
