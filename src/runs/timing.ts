import type { MetricsLine } from './metrics.js';

/** Where a run's time went, from its metrics lines (train and eval lines carry `at`, train lines their step seconds). */
export interface RunTiming {
  readonly steps: number;
  /** From the run's start to its last metrics line. */
  readonly wallSeconds: number;
  /** Training steps per minute of wall-clock time (evals, checkpoints and start-up included). */
  readonly stepsPerMinute: number;
  /** Shares of summed step time; `overhead` is atk's own work inside a step (scoring, batching, bookkeeping). */
  readonly stepShares: {
    readonly generation: number;
    readonly train: number;
    readonly sync: number;
    readonly overhead: number;
  };
  /** Share of wall-clock time outside steps: start-up, evals, checkpoints, trajectory writes. */
  readonly outsideStepsShare: number;
  /** Eval accuracy by minutes since the start, in order. */
  readonly evals: readonly { readonly step: number; readonly minutes: number; readonly accuracy: number }[];
}

/**
 * @param startedAt the run's start (manifest `started_at`).
 * @throws Error when there is no train line with timings to measure.
 */
export function runTiming(lines: readonly MetricsLine[], startedAt: string): RunTiming {
  const start = Date.parse(startedAt);
  const train = lines.filter((l) => l.kind === 'train' && typeof l.time_step_s === 'number');
  if (train.length === 0) throw new Error('no train steps with timings in metrics.jsonl');
  const sum = (key: string): number => train.reduce((a, l) => a + Number(l[key] ?? 0), 0);
  const [step, generation, trainS, sync] = [
    sum('time_step_s'),
    sum('time_generation_s'),
    sum('time_train_s'),
    sum('time_sync_s'),
  ];
  const times = lines.map((l) => (typeof l.at === 'string' ? Date.parse(l.at) : NaN)).filter(Number.isFinite);
  const wallSeconds = times.length > 0 ? (Math.max(...times) - start) / 1000 : step;
  const evals = lines
    .filter((l) => l.kind === 'eval' && typeof l.at === 'string' && typeof l.accuracy === 'number')
    .map((l) => ({
      step: Number(l.step),
      minutes: (Date.parse(l.at as string) - start) / 60_000,
      accuracy: l.accuracy as number,
    }));
  return {
    steps: train.length,
    wallSeconds,
    stepsPerMinute: (train.length / wallSeconds) * 60,
    stepShares: {
      generation: generation / step,
      train: trainS / step,
      sync: sync / step,
      overhead: Math.max(0, step - generation - trainS - sync) / step,
    },
    outsideStepsShare: Math.max(0, wallSeconds - step) / wallSeconds,
    evals,
  };
}

/** Minutes from the start to the first eval at least `gain` (absolute) above the first eval; undefined if none. */
export function minutesToGain(timing: RunTiming, gain: number): number | undefined {
  const base = timing.evals[0];
  if (!base) return undefined;
  return timing.evals.find((e) => e.accuracy >= base.accuracy + gain - 1e-9)?.minutes;
}
