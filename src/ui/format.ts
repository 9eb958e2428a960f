/** Figures as the CLI and the dashboard print them. */

/** A metric to three decimals, `-` when absent. */
export function figure(value: unknown): string {
  return typeof value === 'number' ? value.toFixed(3) : '-';
}

/** `42s`, `3m 05s`, `2h 07m`. */
export function formatDuration(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}
