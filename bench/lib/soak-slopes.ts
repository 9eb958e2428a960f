/**
 * The soak benchmark's arithmetic: the least-squares slope of each sampled figure against the
 * training step, after a warm-up, per 100 steps, and whether it stays under the figure's limit. The
 * slope is fitted to each bin of steps' lowest value (the floor): what an eval or a checkpoint holds
 * open while it runs (sockets, buffers) comes and goes, while a leak raises the floor. The verdict
 * reads the slope over the later half of those samples: a heap that grows to its high-water mark
 * (the trainer's, in the first large evals: glibc keeps it) stops, while a leak goes on growing.
 */

/** One sample: the step the run had recorded when it was taken, and each figure's value then. */
export interface SoakSample {
  readonly step: number;
  readonly values: Readonly<Record<string, number | undefined>>;
}

/** A sampled figure and the most it may grow per 100 steps after warm-up (none: reported only). */
export interface SoakFigure {
  readonly name: string;
  readonly unit: string;
  readonly limitPer100Steps?: number;
  /** Slope only from this step on, when later than the warm-up (a figure that fills a window first). */
  readonly fromStep?: number;
}

export interface SoakRow {
  readonly name: string;
  readonly unit: string;
  /** Mean value over the first and the last tenth of the samples after warm-up. */
  readonly start: number | undefined;
  readonly end: number | undefined;
  readonly slopePer100Steps: number | undefined;
  /** The slope over the later half of the samples after warm-up: what the verdict reads. */
  readonly lateSlopePer100Steps: number | undefined;
  readonly limitPer100Steps: number | undefined;
  readonly samples: number;
  /** False only when the late slope is known and over the limit. */
  readonly ok: boolean;
}

/** Least-squares slope of `value` against `step`, times 100; undefined without two distinct steps. */
export function slopePer100Steps(
  points: readonly { readonly step: number; readonly value: number }[],
): number | undefined {
  const n = points.length;
  if (n < 2) return undefined;
  const meanStep = points.reduce((a, p) => a + p.step, 0) / n;
  const meanValue = points.reduce((a, p) => a + p.value, 0) / n;
  let covariance = 0;
  let variance = 0;
  for (const p of points) {
    covariance += (p.step - meanStep) * (p.value - meanValue);
    variance += (p.step - meanStep) ** 2;
  }
  return variance === 0 ? undefined : (100 * covariance) / variance;
}

/** The lowest value of each `binSteps` steps, at the bin's mean step. */
export function floorPoints(
  points: readonly { readonly step: number; readonly value: number }[],
  binSteps: number,
): { step: number; value: number }[] {
  const bins = new Map<number, { steps: number; n: number; min: number }>();
  for (const p of points) {
    const key = Math.floor(p.step / binSteps);
    const bin = bins.get(key) ?? { steps: 0, n: 0, min: Infinity };
    bins.set(key, { steps: bin.steps + p.step, n: bin.n + 1, min: Math.min(bin.min, p.value) });
  }
  return [...bins.values()].map((b) => ({ step: b.steps / b.n, value: b.min }));
}

/** Each figure's row: samples with a value from `max(warmupSteps, fromStep)` on, slopes of their floor per `binSteps`. */
export function soakRows(
  samples: readonly SoakSample[],
  figures: readonly SoakFigure[],
  warmupSteps: number,
  binSteps = 10,
): SoakRow[] {
  return figures.map((figure) => {
    const from = Math.max(warmupSteps, figure.fromStep ?? 0);
    const points = samples.flatMap((s) => {
      const value = s.values[figure.name];
      return s.step >= from && value !== undefined && Number.isFinite(value) ? [{ step: s.step, value }] : [];
    });
    const slope = slopePer100Steps(floorPoints(points, binSteps));
    const late = slopePer100Steps(floorPoints(points.slice(Math.floor(points.length / 2)), binSteps));
    const tenth = Math.max(1, Math.floor(points.length / 10));
    const mean = (ps: readonly { value: number }[]): number | undefined =>
      ps.length ? ps.reduce((a, p) => a + p.value, 0) / ps.length : undefined;
    return {
      name: figure.name,
      unit: figure.unit,
      start: mean(points.slice(0, tenth)),
      end: mean(points.slice(-tenth)),
      slopePer100Steps: slope,
      lateSlopePer100Steps: late,
      limitPer100Steps: figure.limitPer100Steps,
      samples: points.length,
      ok: late === undefined || figure.limitPer100Steps === undefined || late <= figure.limitPer100Steps,
    };
  });
}
