/**
 * `atk run` from a recipe to a finished run directory: validate, create the run directory, start
 * the policy (trainer + engine), build the episode kit, then drive the training loop, and on any
 * exit stop the children and set the run's status. Yields the loop's events for the CLI to show.
 */
import { datasetContext } from '../datasets/context.js';
import { datasets } from '../datasets/index.js';
import type { Task } from '../datasets/types.js';
import { CancelledError } from '../errors/index.js';
import type { ResolvedRecipe } from '../recipe/index.js';
import type { RunEvent, StepMetrics } from './events.js';
import { FRESH_START, resumeRun } from './resume.js';
import { openSession, type Session } from './session.js';
import type { RunDir } from '../runs/index.js';
import { trainingLoop, type TrainingContext } from './training-loop.js';
import { startTeacher, type RunningTeacher } from '../policy/teacher.js';
import { teacherScoredEpisodes } from '../rollout/teacher-scored.js';

export interface TrainRunOptions {
  readonly recipe: ResolvedRecipe;
  readonly recipeDir: string;
  readonly recipeFile: string;
  readonly run: RunDir;
  readonly resume: boolean;
  readonly signal: AbortSignal;
}

/** Run (or resume) training; yields events; sets the run's final status whatever happens. */
export async function* trainRun(options: TrainRunOptions): AsyncGenerator<RunEvent> {
  const { recipe, run, signal } = options;
  let session: Session | undefined;
  let teacher: RunningTeacher | undefined;
  let status: 'finished' | 'failed' | 'interrupted' = 'failed';
  // The first line of what failed the run, kept in the manifest's status history.
  let failure: string | undefined;
  const evals: Record<string, unknown> = {};
  let lastMetrics: StepMetrics | undefined;
  const started = Date.now();
  try {
    await run.setStatus('running');
    yield { type: 'phase', message: `loading dataset ${recipe.dataset.name}` };
    const [trainTasks, evalTasks] = await loadSplits(recipe, options.recipeDir);
    session = yield* openSession({
      recipe,
      recipeDir: options.recipeDir,
      recipeFile: options.recipeFile,
      runDir: run.dir,
      logsDir: run.logsDir,
      signal,
    });
    const { policy, tokenizer } = session;
    teacher = await startTeacher({
      recipe,
      recipeDir: options.recipeDir,
      logsDir: run.logsDir,
      runDir: run.dir,
      signal,
    });
    // the teacher scores each episode as it ends, evals' too (their teacher_reverse_kl)
    const kit = teacher
      ? { ...session.kit, runner: teacherScoredEpisodes(session.kit.runner, teacher.scorer) }
      : session.kit;
    await run.updateManifest({
      ...policy.facts,
      ...teacher?.facts,
      tokenizer: tokenizer.hashes,
      dataset: { name: recipe.dataset.name, train: trainTasks.length, eval: evalTasks.length },
    });

    const resumed = options.resume ? yield* resumeRun(run, policy.trainer) : FRESH_START;
    Object.assign(evals, resumed.evals);
    lastMetrics = resumed.lastMetrics;
    const context: TrainingContext = {
      recipe,
      trainTasks,
      evalTasks,
      kit,
      trainer: policy.trainer,
      engine: policy.sync,
      lost: policy.lost,
      store: run,
      startStep: resumed.startStep,
      startPolicyVersion: resumed.startPolicyVersion,
      ...(resumed.dataState ? { startDataState: resumed.dataState } : {}),
      // By label: `atk eval` of a checkpoint writes under another label (step-00010-2) and does not stand in for the run's own.
      recordedEvals: new Set(Object.keys(resumed.evals)),
      signal,
    };
    for await (const event of trainingLoop(context)) {
      if (event.type === 'evalFinished') evals[event.label] = event.summary;
      if (event.type === 'stepFinished') lastMetrics = event.metrics;
      yield event;
    }
    status = signal.aborted ? 'interrupted' : 'finished';
  } catch (error) {
    status = signal.aborted || error instanceof CancelledError ? 'interrupted' : 'failed';
    if (status === 'failed') failure = (error instanceof Error ? error.message : String(error)).split('\n')[0];
    throw signal.aborted && !(error instanceof CancelledError)
      ? new CancelledError('run interrupted', { cause: error })
      : error;
  } finally {
    await teacher?.close();
    await session?.close();
    const summary = { status, seconds: (Date.now() - started) / 1000, last_step: lastMetrics ?? null, evals };
    await run.writeSummary(summary);
    await run.setStatus(status, failure);
    yield { type: 'runFinished', status, summary };
  }
}

/** Train and eval tasks, each cut to its limit (a seeded, fixed subset for eval). */
async function loadSplits(recipe: ResolvedRecipe, recipeDir: string): Promise<[Task[], Task[]]> {
  const dataset = await datasets.get(recipe.dataset.name);
  const ctx = datasetContext(recipe, recipeDir);
  const train = await dataset.load(recipe.dataset.split, ctx);
  const wantsEval = recipe.train.eval_before || recipe.train.eval_after || recipe.train.eval_every > 0;
  const evalTasks = wantsEval ? await dataset.load(recipe.dataset.eval_split, ctx) : [];
  return [
    recipe.dataset.limit ? train.slice(0, recipe.dataset.limit) : train,
    recipe.dataset.eval_limit ? evalTasks.slice(0, recipe.dataset.eval_limit) : evalTasks,
  ];
}
