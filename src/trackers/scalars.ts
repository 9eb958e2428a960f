import type { MetricsLine } from '../runs/metrics.js';

/** The scalars of one metrics.jsonl line, as trackers log them. */
export interface StepScalars {
  readonly step: number;
  /** Seconds since the epoch, from the line's `at` when it has one. */
  readonly wallTime: number;
  /** Tag -> value: a train line's figures under their own names (`reward/mean`, `train/loss`, `tool_calls/calculator`), an eval line's under `eval/`. */
  readonly values: ReadonlyArray<readonly [string, number]>;
}

/** Keys that say what a line is rather than measure anything. */
const NOT_FIGURES = new Set(['kind', 'step', 'at', 'policy_version']);

/**
 * One metrics line's finite numbers as tagged scalars; undefined for a line without a step.
 * Eval lines keep their own names under `eval/` (and `eval/<label>/` for a labelled `atk eval`),
 * so held-out figures sit beside, not on top of, the training ones.
 */
export function scalarsOf(line: MetricsLine): StepScalars | undefined {
  if (typeof line.step !== 'number') return undefined;
  const prefix =
    line.kind === 'eval' ? (typeof line.label === 'string' && line.label !== '' ? `eval/${line.label}/` : 'eval/') : '';
  const values: Array<readonly [string, number]> = [];
  for (const [key, value] of Object.entries(line)) {
    if (NOT_FIGURES.has(key) || typeof value !== 'number' || !Number.isFinite(value)) continue;
    values.push([`${prefix}${key}`, value]);
  }
  const at = typeof line.at === 'string' ? Date.parse(line.at) : Number.NaN;
  return { step: line.step, wallTime: (Number.isNaN(at) ? Date.now() : at) / 1000, values };
}
