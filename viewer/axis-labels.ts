/**
 * Axis tick labels that stay distinct at any scale. uPlot's default keeps three decimals, so a chart
 * of values around 1e-7 (the train/inference mismatch) labels every tick "0"; here such ticks read
 * `1e-7`, `2.5e-7`, and ordinary ones keep their usual form, with as many decimals as they need.
 */

/** Below this magnitude, or at and above LARGE, ticks are written in scientific notation. */
const SMALL = 1e-3;
const LARGE = 1e6;
const PLAIN = new Intl.NumberFormat('en-US', { maximumFractionDigits: 15 });

/** The labels of a numeric axis's ticks (`null` splits stay blank, as uPlot's own labels do). */
export function tickLabels(splits: readonly (number | null)[]): string[] {
  const values = splits.filter((v): v is number => v !== null && Number.isFinite(v));
  const largest = Math.max(0, ...values.map(Math.abs));
  const scientific = largest > 0 && (largest < SMALL || largest >= LARGE);
  // Digits enough to tell neighbouring ticks apart, and no more: float noise (0.30000000000000004) is dropped.
  const tolerance = smallestGap(values) * 1e-6 || largest * 1e-9;
  return splits.map((v) => {
    if (v === null || !Number.isFinite(v)) return '';
    if (v === 0) return '0';
    if (scientific) return exponential(v, tolerance);
    return PLAIN.format(Number(v.toFixed(digitsFor(v, tolerance, (d) => Number(v.toFixed(d)), 15))));
  });
}

/** One value for the legend: four significant digits, in scientific notation where ticks would use it. */
export function valueLabel(v: number | null | undefined): string {
  if (v === null || v === undefined || Number.isNaN(v)) return '-';
  const size = Math.abs(v);
  if (size > 0 && (size < SMALL || size >= LARGE)) return Number(v.toPrecision(4)).toExponential().replace('e+', 'e');
  return Number.isInteger(v) ? String(v) : v.toFixed(4);
}

function exponential(v: number, tolerance: number): string {
  const digits = digitsFor(v, tolerance, (d) => Number(v.toExponential(d)), 14);
  return v.toExponential(digits).replace('e+', 'e');
}

/** The fewest digits (0..most) for which `rounded` stays within `tolerance` of `v`. */
function digitsFor(v: number, tolerance: number, rounded: (digits: number) => number, most: number): number {
  for (let d = 0; d < most; d++) if (Math.abs(rounded(d) - v) <= tolerance) return d;
  return most;
}

function smallestGap(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  let gap = Number.POSITIVE_INFINITY;
  for (let i = 1; i < sorted.length; i++)
    if (sorted[i]! > sorted[i - 1]!) gap = Math.min(gap, sorted[i]! - sorted[i - 1]!);
  return Number.isFinite(gap) ? gap : 0;
}
