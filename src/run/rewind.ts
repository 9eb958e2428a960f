import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { RunDir } from '../runs/index.js';

/**
 * Make a run directory look as it did right after `stepsDone` steps, so a resumed run neither
 * duplicates nor misses a record: metrics lines of later steps, their trajectory files, and the
 * temporary files of atomic writes a killed run left behind go. (Checkpoints are committed after
 * the step's metrics and trajectories, so those of steps up to `stepsDone` are complete.)
 */
export async function rewindRun(run: RunDir, stepsDone: number): Promise<void> {
  await run.truncateMetricsAfter(stepsDone);
  const later = (await run.trajectorySteps()).filter((step) => step > stepsDone);
  await Promise.all(later.map((step) => rm(run.trajectoryPath(step), { force: true })));
  const leftovers = (await readdir(run.trajectoriesDir).catch(() => [] as string[])).filter(
    (name) => name.startsWith('.') && name.endsWith('.tmp'),
  );
  await Promise.all(leftovers.map((name) => rm(join(run.trajectoriesDir, name), { force: true })));
}
