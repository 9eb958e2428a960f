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
import { collectJournal } from '../rollout/collect-journal.js';
import { rewindRun } from './rewind.js';
import { openSession, type Session } from './session.js';
import type { RunDir } from '../runs/index.js';
import { trainingLoop, type TrainingPlan } from './training-loop.js';

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
  let status: 'finished' | 'failed' | 'interrupted' = 'failed';
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
    const { policy, kit, tokenizer } = session;
    await run.updateManifest({
      ...policy.facts,
      tokenizer: tokenizer.hashes,
      dataset: { name: recipe.dataset.name, train: trainTasks.length, eval: evalTasks.length },
    });

    let startStep = 0;
    let startPolicyVersion = 0;
    if (options.resume) {
      const checkpoint = await run.latestCheckpoint();
      if (checkpoint) {
        startPolicyVersion = await policy.trainer.load(checkpoint.dir);
        startStep = checkpoint.step;
      }
      await rewindRun(run, startStep);
      // Episodes the killed run had collected, or had in flight, for steps after its checkpoint: never trained.
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
      for (const line of await run.readMetrics()) {
        if (line.kind === 'eval' && typeof line.step === 'number') {
          const { kind: _kind, step: _step, at: _at, ...summary } = line;
          if (typeof summary.label === 'string') evals[summary.label] = summary;
        }
        if (line.kind === 'train') lastMetrics = line as unknown as StepMetrics;
      }
    }
    // By label: `atk eval` of a checkpoint writes under another label (step-00010-2) and does not stand in for the run's own.
    const recordedEvals = new Set(Object.keys(evals));
    const context = {
      plan: trainingPlan(recipe),
      trainTasks,
      evalTasks,
      kit,
      trainer: policy.trainer,
      engine: policy.sync,
      lost: policy.lost,
      store: run,
      startStep,
      startPolicyVersion,
      recordedEvals,
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
    throw signal.aborted && !(error instanceof CancelledError)
      ? new CancelledError('run interrupted', { cause: error })
      : error;
  } finally {
    await session?.close();
    const summary = { status, seconds: (Date.now() - started) / 1000, last_step: lastMetrics ?? null, evals };
    await run.writeSummary(summary);
    await run.setStatus(status);
    yield { type: 'runFinished', status, summary };
  }
}

/** The training loop's plan, read off the recipe. */
export function trainingPlan(recipe: ResolvedRecipe): TrainingPlan {
  const algorithm = recipe.algorithm;
  return {
    seed: recipe.seed,
    steps: recipe.train.steps,
    ...(recipe.train.time_budget_s !== undefined && { timeBudgetSeconds: recipe.train.time_budget_s }),
    tasksPerStep: recipe.train.tasks_per_step,
    groupSize: algorithm.name === 'sft' ? 1 : recipe.algorithm.group_size,
    concurrency: recipe.rollout.concurrency,
    maxStaleness: recipe.rollout.max_staleness,
    sampling: { temperature: recipe.rollout.temperature, topP: recipe.rollout.top_p, topK: recipe.rollout.top_k },
    greedyPerGroup: recipe.rollout.greedy_per_group,
    onFailure: recipe.rollout.on_failure,
    algorithm,
    evalEvery: recipe.train.eval_every,
    evalBefore: recipe.train.eval_before,
    evalAfter: recipe.train.eval_after,
    saveEvery: recipe.train.save_every,
    keepCheckpoints: recipe.train.keep_checkpoints,
    eval: {
      split: recipe.dataset.eval_split,
      samples: 1,
      temperature: 0,
      topP: 1,
      topK: -1,
      concurrency: recipe.rollout.concurrency,
      seed: recipe.seed,
    },
  };
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
