import type { TrajectoryRetention } from '../runs/index.js';

/** What the training loop and evaluation write to a run directory. */
export interface RunStore {
  readonly dir: string;
  /** Where eval/<label>/ directories go. */
  readonly evalDir: string;
  /** Directory for the checkpoint taken after `stepsDone` steps (steps are numbered from 1). */
  checkpointDir(stepsDone: number): string;
  /** Mark that checkpoint complete (resume uses only complete ones) and prune to the newest `keep`. */
  commitCheckpoint(stepsDone: number, keep: number): Promise<void>;
  /** Write one step's trajectory lines as a whole file (atomically). */
  writeTrajectories(step: number, records: readonly unknown[]): Promise<void>;
  /** Delete the trajectory files `keep` no longer keeps once step `latest` is written. */
  pruneTrajectories(latest: number, keep: TrajectoryRetention): Promise<readonly number[]>;
  /** Append one line to metrics.jsonl. */
  appendMetrics(line: object): Promise<void>;
}
