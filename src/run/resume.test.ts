import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import type { PolicyTrainer } from '../policy/policy.js';
import { collectJournal } from '../rollout/collect-journal.js';
import { createRunDir, type RunDir } from '../runs/index.js';
import { writeDataState } from './data-state.js';
import type { RunEvent } from './events.js';
import { resumeRun, type ResumePoint } from './resume.js';

// resumeRun against a real run directory: which checkpoint the trainer is given, what is rewound, and
// what earlier sessions' records it hands back. The trainer is a recorder here: the e2e resume test runs
// the real one and checks the weights and optimizer state it continues from.
const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

async function run(): Promise<RunDir> {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'atk-resume-')));
  made.push(dir);
  return createRunDir({
    runsDir: dir,
    name: 'demo',
    recipeText: 'name: demo\n',
    resolvedYaml: 'name: demo\n',
    seed: 1,
    command: ['atk', 'run', 'demo.yaml'],
  });
}

/** A trainer that answers `load` with the policy version the checkpoint directory was saved at. */
function recordingTrainer(versionOf: (dir: string) => number): PolicyTrainer & { loaded: string[] } {
  const loaded: string[] = [];
  return {
    loaded,
    trainStep: () => Promise.reject(new Error('not trained here')),
    save: () => Promise.resolve(),
    load: (dir) => {
      loaded.push(dir);
      return Promise.resolve(versionOf(dir));
    },
  };
}

async function drain(work: AsyncGenerator<RunEvent, ResumePoint>): Promise<{ point: ResumePoint; events: RunEvent[] }> {
  const events: RunEvent[] = [];
  for (;;) {
    const next = await work.next();
    if (next.done) return { point: next.value, events };
    events.push(next.value);
  }
}

describe('resumeRun', () => {
  test('returns the newest complete checkpoint loaded into the trainer, its step and policy version, with later records rewound', async () => {
    const dir = await run();
    for (const step of [1, 2, 3]) {
      await dir.appendMetrics({ kind: 'train', step, reward_mean: step / 10 });
      await dir.writeTrajectories(step, [{ step }]);
    }
    await dir.appendMetrics({ kind: 'eval', step: 2, label: 'step-00002', accuracy: 0.5 });
    // Lines that are no eval summary of the run's own: another kind with a label, an eval without one.
    await dir.appendMetrics({ kind: 'note', step: 2, label: 'not-an-eval' });
    await dir.appendMetrics({ kind: 'eval', step: 2, accuracy: 0.1 });
    await dir.commitCheckpoint(1, 3);
    await dir.commitCheckpoint(2, 3);
    // Step 3's checkpoint was being written when the run was killed: no marker, so not complete.
    const journal = collectJournal(dir.dir);
    for (const step of [1, 2, 3, 4]) await journal.started(step, 8);

    const trainer = recordingTrainer(() => 5);
    const { point, events } = await drain(resumeRun(dir, trainer));

    expect(trainer.loaded).toStrictEqual([dir.checkpointDir(2)]);
    expect([point.startStep, point.startPolicyVersion]).toStrictEqual([2, 5]);
    expect(point.lastMetrics).toMatchObject({ kind: 'train', step: 2 });
    expect(point.evals).toStrictEqual({ 'step-00002': { label: 'step-00002', accuracy: 0.5 } });
    expect((await dir.readMetrics()).map((l) => [l.kind, l.step])).toStrictEqual([
      ['train', 1],
      ['train', 2],
      ['eval', 2],
      ['note', 2],
      ['eval', 2],
      ['resume', 2],
    ]);
    expect(await dir.trajectorySteps()).toStrictEqual([1, 2]);
    expect(events).toStrictEqual([
      {
        type: 'warning',
        message: 'resuming after step 2: 16 episode(s) collected or in flight for later steps were discarded',
      },
    ]);
  });

  test("returns the data stream's cursor and curriculum saved with the checkpoint it resumes from, and none without one", async () => {
    const dir = await run();
    const state = (position: number) => ({ position, curriculum: { t3: 'ss', 't-7': 'mu' } });
    await writeDataState(dir.checkpointDir(1), state(5));
    await dir.commitCheckpoint(1, 3);
    await writeDataState(dir.checkpointDir(2), state(11));
    await dir.commitCheckpoint(2, 3);
    // Step 3's state was written, its checkpoint never committed.
    await writeDataState(dir.checkpointDir(3), state(17));
    const { point } = await drain(
      resumeRun(
        dir,
        recordingTrainer(() => 2),
      ),
    );
    expect([point.startStep, point.dataState]).toStrictEqual([2, state(11)]);

    const older = await run();
    await older.commitCheckpoint(1, 3);
    const { point: withoutState } = await drain(
      resumeRun(
        older,
        recordingTrainer(() => 1),
      ),
    );
    expect([withoutState.startStep, 'dataState' in withoutState]).toStrictEqual([1, false]);
  });

  test('returns step 0 and the starting weights untouched when the run saved no checkpoint', async () => {
    const dir = await run();
    await dir.appendMetrics({ kind: 'train', step: 1, reward_mean: 0.1 });
    const trainer = recordingTrainer(() => 9);
    const { point } = await drain(resumeRun(dir, trainer));
    expect(trainer.loaded).toStrictEqual([]);
    expect([point.startStep, point.startPolicyVersion, point.lastMetrics]).toStrictEqual([0, 0, undefined]);
    expect(await dir.readMetrics()).toStrictEqual([]);
  });
});
