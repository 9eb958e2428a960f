/** One line of a plot. */
export interface PlotSeries {
  readonly name: string;
  readonly points: readonly (readonly [number, number])[];
  readonly color: string;
  /** Draw markers at the points (sparse series such as evals). */
  readonly markers?: boolean;
}

export interface PlotOptions {
  readonly title: string;
  readonly series: readonly PlotSeries[];
  readonly xLabel?: string;
  readonly width?: number;
  readonly height?: number;
  /** Format of y tick labels; default: up to 3 significant digits. */
  readonly yFormat?: (y: number) => string;
}

const MARGIN = { left: 56, right: 16, top: 28, bottom: 36 };

/**
 * A self-contained SVG line chart (axes, ticks, grid, legend): no script and no network, so a report
 * opens anywhere. Each series is one `<path class="series" data-points="n">`.
 */
export function linePlot(options: PlotOptions): string {
  const width = options.width ?? 560;
  const height = options.height ?? 260;
  const all = options.series.flatMap((s) => s.points).filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
  const title = `<text x="${MARGIN.left}" y="18" class="plot-title">${escapeXml(options.title)}</text>`;
  if (all.length === 0) {
    return `<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">${title}<text x="${width / 2}" y="${height / 2}" text-anchor="middle" class="empty">no data</text></svg>`;
  }
  const [x0, x1] = padRange(Math.min(...all.map((p) => p[0])), Math.max(...all.map((p) => p[0])));
  const [y0, y1] = padRange(Math.min(...all.map((p) => p[1])), Math.max(...all.map((p) => p[1])));
  const plotW = width - MARGIN.left - MARGIN.right;
  const plotH = height - MARGIN.top - MARGIN.bottom;
  const sx = (x: number): number => MARGIN.left + ((x - x0) / (x1 - x0)) * plotW;
  const sy = (y: number): number => MARGIN.top + plotH - ((y - y0) / (y1 - y0)) * plotH;
  const yFormat = options.yFormat ?? ((y: number) => String(Number(y.toPrecision(3))));
  const parts: string[] = [title];
  for (const y of niceTicks(y0, y1, 5)) {
    parts.push(
      `<line x1="${MARGIN.left}" x2="${width - MARGIN.right}" y1="${r(sy(y))}" y2="${r(sy(y))}" class="grid"/>`,
    );
    parts.push(
      `<text x="${MARGIN.left - 6}" y="${r(sy(y) + 4)}" text-anchor="end" class="tick">${escapeXml(yFormat(y))}</text>`,
    );
  }
  for (const x of niceTicks(x0, x1, 6)) {
    parts.push(
      `<text x="${r(sx(x))}" y="${height - MARGIN.bottom + 16}" text-anchor="middle" class="tick">${String(Number(x.toPrecision(4)))}</text>`,
    );
  }
  parts.push(`<rect x="${MARGIN.left}" y="${MARGIN.top}" width="${plotW}" height="${plotH}" class="frame"/>`);
  if (options.xLabel)
    parts.push(
      `<text x="${MARGIN.left + plotW / 2}" y="${height - 4}" text-anchor="middle" class="axis-label">${escapeXml(options.xLabel)}</text>`,
    );
  for (const [i, s] of options.series.entries()) {
    const pts = s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
    if (pts.length === 0) continue;
    const d = pts.map(([x, y], k) => `${k === 0 ? 'M' : 'L'}${r(sx(x))} ${r(sy(y))}`).join(' ');
    parts.push(
      `<path class="series" data-series="${escapeXml(s.name)}" data-points="${pts.length}" d="${d}" fill="none" stroke="${s.color}" stroke-width="2"/>`,
    );
    if (s.markers || pts.length === 1)
      for (const [x, y] of pts) parts.push(`<circle cx="${r(sx(x))}" cy="${r(sy(y))}" r="3.5" fill="${s.color}"/>`);
    const lx = MARGIN.left + 8 + i * 150;
    parts.push(
      `<line x1="${lx}" x2="${lx + 16}" y1="${MARGIN.top + 10}" y2="${MARGIN.top + 10}" stroke="${s.color}" stroke-width="3"/><text x="${lx + 20}" y="${MARGIN.top + 14}" class="legend">${escapeXml(s.name)}</text>`,
    );
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">${parts.join('')}</svg>`;
}

/** Round tick values that cover [lo, hi], about `count` of them. */
export function niceTicks(lo: number, hi: number, count: number): number[] {
  const raw = (hi - lo) / Math.max(1, count);
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw) ?? raw;
  const ticks: number[] = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push(Number(t.toPrecision(12)));
  return ticks;
}

/** Escape text for SVG and HTML. */
export function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function padRange(lo: number, hi: number): [number, number] {
  if (hi > lo) return [lo, hi];
  const pad = Math.abs(lo) > 0 ? Math.abs(lo) * 0.1 : 1;
  return [lo - pad, hi + pad];
}

function r(v: number): string {
  return v.toFixed(1);
}
