import type { MetricsLine } from '../../runs/index.js';
import { linePlot, type PlotSeries } from './svg-plot.js';

/**
 * The report's overlap section: whether asynchronous rollouts pay off. Engine-busy and trainer-busy
 * shares of each step's wall time (near 1 for both when generation and training overlap; summing to
 * about 1 in a synchronous run), and how many policy versions behind the trained episodes were.
 */
export function overlapSection(train: readonly MetricsLine[]): string {
  const busy = [series(train, 'engine_busy_share', '#2563eb'), series(train, 'trainer_busy_share', '#dc2626')];
  if (busy.every((s) => s.points.length === 0))
    return '<p>No overlap figures recorded (runs of atk before asynchronous rollouts).</p>';
  const staleness = [series(train, 'staleness_mean', '#059669'), series(train, 'staleness_max', '#d97706')];
  const dropped = train.reduce(
    (sum, m) => sum + (typeof m.stale_groups_dropped === 'number' ? m.stale_groups_dropped : 0),
    0,
  );
  const mean = (key: string): number =>
    average(train.flatMap((m) => (typeof m[key] === 'number' ? [m[key] as number] : [])));
  const percent = (y: number): string => `${Math.round(y * 100)}%`;
  return [
    `<p>Engine busy ${percent(mean('engine_busy_share'))} and trainer busy ${percent(mean('trainer_busy_share'))} of the time on average; ` +
      `staleness ${mean('staleness_mean').toFixed(2)} versions on average; ${dropped} group(s) dropped as too stale.</p>`,
    '<div class="plots">',
    `<figure>${linePlot({ title: 'Busy share of each step (engine, trainer)', series: busy, xLabel: 'step', yFormat: percent })}</figure>`,
    `<figure>${linePlot({ title: 'Staleness in policy versions (mean, max)', series: staleness, xLabel: 'step' })}</figure>`,
    '</div>',
  ].join('');
}

function series(train: readonly MetricsLine[], key: string, color: string): PlotSeries {
  const points = train.flatMap((m) =>
    typeof m[key] === 'number' && typeof m.step === 'number' ? [[m.step, m[key] as number] as const] : [],
  );
  return { name: key, points, color };
}

function average(values: readonly number[]): number {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0;
}
