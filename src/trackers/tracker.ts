import type { StepScalars } from './scalars.js';

/** Somewhere a run's metrics go besides metrics.jsonl. */
export interface Tracker {
  readonly name: string;
  /** Record one metrics line's scalars. @throws or rejects when the tracker cannot (the set warns once and drops it). */
  log(scalars: StepScalars): void | Promise<void>;
  close(): void | Promise<void>;
}
