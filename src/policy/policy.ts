import type { AssembledBatch } from '../algorithms/batch.js';
import type { SyncTransfer } from '../engines/sync/index.js';

/** The trainer as the run loop sees it: one update per step, checkpoints, resume. */
export interface PolicyTrainer {
  /** Apply one update; returns the trainer's metrics and the new policy version. */
  trainStep(
    batch: AssembledBatch,
  ): Promise<{ readonly metrics: Readonly<Record<string, number>>; readonly policyVersion: number }>;
  /** Write a checkpoint (weights or adapter, plus optimizer/RNG state) to `dir`, atomically. */
  save(dir: string): Promise<void>;
  /** Restore a checkpoint written by `save`; returns its policy version. */
  load(dir: string): Promise<number>;
}

/** Keeps the inference engine serving the trainer's newest policy. */
export interface PolicySync {
  /**
   * Make the engine serve `policyVersion` before the next rollouts (embedded: shared weights,
   * nothing to do; vLLM/SGLang: load the adapter or reload weights from `checkpointDir`).
   */
  sync(policyVersion: number, checkpointDir: string): Promise<void>;
  /** What the last sync moved (launched engines; none when it moved nothing), for the step's `sync/` metrics. */
  readonly lastTransfer?: SyncTransfer | undefined;
}
