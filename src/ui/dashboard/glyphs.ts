import { formatDuration } from '../format.js';

const BLOCKS = '▁▂▃▄▅▆▇█';

/**
 * A one-line chart of the last `width` values, scaled between their min and max (a flat series is
 * drawn at mid height). Empty for no values.
 */
export function sparkline(values: readonly number[], width: number): string {
  const shown = values.slice(-width).filter((v) => Number.isFinite(v));
  if (shown.length === 0) return '';
  const lo = Math.min(...shown);
  const hi = Math.max(...shown);
  return shown.map((v) => BLOCKS[hi === lo ? 3 : Math.round(((v - lo) / (hi - lo)) * (BLOCKS.length - 1))]).join('');
}

/** `[█████░░░░░]` of `width` cells for a fraction 0..1. */
export function progressBar(fraction: number, width: number): string {
  const filled = Math.round(Math.max(0, Math.min(1, fraction)) * width);
  return `${'█'.repeat(filled)}${'░'.repeat(width - filled)}`;
}

/** `42s`, `3m 05s`, `2h 07m` (as `atk runs` prints durations); `-` when unknown. */
export function formatSeconds(seconds: number | undefined): string {
  if (seconds === undefined || !Number.isFinite(seconds)) return '-';
  return formatDuration(Math.max(0, seconds));
}
