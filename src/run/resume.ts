import type { RunEvent, StepMetrics } from './events.js';
import type { PolicyTrainer } from '../policy/policy.js';
import { collectJournal } from '../rollout/collect-journal.js';
import type { DataState } from '../rollout/data-stream.js';
import type { RunDir } from '../runs/index.js';
import { readDataState } from './data-state.js';
import { rewindRun } from './rewind.js';

/** Where a resumed run goes on from, and what its earlier sessions recorded. */
export interface ResumePoint {
  /** Steps already done: the latest checkpoint's (0 when the run saved none). */
  readonly startStep: number;
  /** Policy version of the checkpoint's weights, now loaded into the trainer. */
  readonly startPolicyVersion: number;
  /** The data stream's cursor and curriculum saved with the checkpoint; absent for a fresh run or a checkpoint without them. */
  readonly dataState?: DataState;
  /** Eval summaries by label, so a resume that runs no eval keeps them in summary.json. */
  readonly evals: Record<string, unknown>;
  /** The last training step's metrics line, for the same reason. */
  readonly lastMetrics?: StepMetrics;
}

/** A new run starts here. */
export const FRESH_START: ResumePoint = { startStep: 0, startPolicyVersion: 0, evals: {} };

/**
 * Resumes `run` from its latest checkpoint: loads the weights and optimizer state into the trainer,
 * rewinds what the killed session wrote past that step, and discards the episodes it had collected for
 * later steps (they were never trained). Yields a warning when it discards any.
 */
export async function* resumeRun(run: RunDir, trainer: PolicyTrainer): AsyncGenerator<RunEvent, ResumePoint> {
  const checkpoint = await run.latestCheckpoint();
  const startStep = checkpoint?.step ?? 0;
  const startPolicyVersion = checkpoint ? await trainer.load(checkpoint.dir) : 0;
  const dataState = checkpoint ? await readDataState(checkpoint.dir) : undefined;
  await rewindRun(run, startStep);
  const discarded = await collectJournal(run.dir).discardAfter(startStep);
  if (discarded > 0) {
    await run.appendMetrics({
      kind: 'resume',
      step: startStep,
      at: new Date().toISOString(),
      discarded_episodes: discarded,
    });
    yield {
      type: 'warning',
      message: `resuming after step ${startStep}: ${discarded} episode(s) collected or in flight for later steps were discarded`,
    };
  }
  // What earlier sessions recorded stays in summary.json: a resume that runs no step or eval
  // (a finished run, or one killed after its last checkpoint) must not write an empty summary.
  const evals: Record<string, unknown> = {};
  let lastMetrics: StepMetrics | undefined;
  for (const line of await run.readMetrics()) {
    if (line.kind === 'eval' && typeof line.label === 'string') {
      const { kind: _kind, step: _step, at: _at, ...summary } = line;
      evals[line.label] = summary;
    }
    if (line.kind === 'train') lastMetrics = line as unknown as StepMetrics;
  }
  return {
    startStep,
    startPolicyVersion,
    evals,
    ...(dataState ? { dataState } : {}),
    ...(lastMetrics ? { lastMetrics } : {}),
  };
}
