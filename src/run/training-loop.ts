/**
 * The `atk run` loop, as on the whiteboard: for each step collect, score, advantage, update, sync,
 * record. Each phase is one call in step-phases.ts; everything else (episodes, rewards, the trainer, the
 * engine, files) is one call further away.
 */
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { servedPolicy } from '../agent/policy-clock.js';
import type { Task } from '../datasets/types.js';
import type { PolicySync, PolicyTrainer } from '../policy/policy.js';
import { stepCollector, type EpisodeGate } from '../rollout/async-collector.js';
import { collectJournal } from '../rollout/collect-journal.js';
import { type DataState, stepTurns } from '../rollout/data-stream.js';
import type { EpisodeKit } from '../rollout/collect.js';
import { reportStalls, StallWatch } from '../rollout/stall-watch.js';
import { watchedKit } from '../rollout/watched-kit.js';
import { stepName } from '../runs/index.js';
import { EventChannel } from '../util/event-channel.js';
import { writeDataState } from './data-state.js';
import { evaluate } from './evaluate.js';
import type { EvalSummary, RunEvent } from './events.js';
import type { RunStore } from './run-store.js';
import {
  advantages,
  collect,
  collectStep,
  EVAL_DECODING,
  groupSize,
  record,
  type StepScope,
  sync,
  type TrainingRecipe,
  update,
} from './step-phases.js';

export interface TrainingContext {
  readonly recipe: TrainingRecipe;
  readonly trainTasks: readonly Task[];
  readonly evalTasks: readonly Task[];
  readonly kit: EpisodeKit;
  readonly trainer: PolicyTrainer;
  readonly engine: PolicySync;
  readonly store: RunStore;
  /** Steps already done (0 for a new run; the checkpoint's step on resume). Steps are numbered from 1. */
  readonly startStep: number;
  /** Policy version of the starting weights (the checkpoint's on resume). */
  readonly startPolicyVersion: number;
  /** Where the data stream stands (the checkpoint's on resume); absent: after `startStep` steps of `train.tasks_per_step` tasks, no curriculum. */
  readonly startDataState?: DataState | undefined;
  /** Labels of the evals a resumed run already recorded (the eval before training, or after the last step), so they are not repeated. */
  readonly recordedEvals?: ReadonlySet<string>;
  readonly signal: AbortSignal;
  /** Rejects once the trainer or an engine is lost (ended, or stopped answering): the step or eval waiting on episodes fails with it. */
  readonly lost?: Promise<never> | undefined;
}

/** Run the training loop, yielding what happens as events; a stalled step or eval is reported as a warning naming what it waits on. */
export async function* trainingLoop(context: TrainingContext): AsyncGenerator<RunEvent> {
  const watch = new StallWatch();
  const stalls = new EventChannel<RunEvent>();
  const stop = reportStalls(watch, (message) => stalls.push({ type: 'warning', message }));
  try {
    yield* loop({ ...context, kit: watchedKit(context.kit, watch) }, watch, stalls);
  } finally {
    stop();
  }
}

async function* loop(
  ctx: TrainingContext,
  watch: StallWatch,
  channel: EventChannel<RunEvent>,
): AsyncGenerator<RunEvent> {
  const { recipe, store, signal } = ctx;
  const { train } = recipe;
  const episodesPerStep = ctx.trainTasks.length === 0 ? 0 : train.tasks_per_step * groupSize(recipe);
  let policyVersion = ctx.startPolicyVersion;
  const scope: StepScope = {
    ...ctx,
    watch,
    channel,
    // The version the engine serves, read at every engine request so each turn records who sampled it.
    served: servedPolicy(policyVersion),
    journal: collectJournal(store.dir),
    draws: stepTurns({
      tasks: ctx.trainTasks,
      seed: recipe.seed,
      tasksPerStep: train.tasks_per_step,
      startStep: ctx.startStep,
      start: ctx.startDataState ?? { position: ctx.startStep * train.tasks_per_step, curriculum: {} },
      curriculum: recipe.dataset.curriculum,
      refills: recipe.algorithm.dynamic_sampling !== undefined,
    }),
    collector: stepCollector({
      collect: (step, gate) => collectStep(scope, step, gate),
      maxStaleness: recipe.rollout.max_staleness,
      lastStep: train.steps,
      concurrency: recipe.rollout.concurrency,
      signal,
    }),
  };
  const { collector } = scope;
  yield {
    type: 'runStarted',
    runDir: store.dir,
    startStep: ctx.startStep,
    totalSteps: train.steps,
    resumed: ctx.startStep > 0,
  };
  try {
    // When the first step's episodes started: with the eval before training, during that eval.
    let firstCollectedAt: number | undefined;
    if (ctx.startStep === 0 && train.eval_before) {
      // The eval before training reads the weights the first step samples from: collect that step
      // alongside it, in the same slots, so each fills the engine's batch where the other tails off.
      firstCollectedAt = performance.now();
      collector.begin(1);
      yield* runEval(ctx, watch, stepName(0), 0, policyVersion, collector.share);
    }
    let previousRecordedAt = performance.now();
    // the step that ends training: train.steps, or the one that spends train.time_budget_s
    let lastStep = train.steps;
    let trainingSeconds = 0;

    for (let step = ctx.startStep + 1; step <= lastStep; step++) {
      if (signal.aborted) return;
      const startedAt = performance.now();
      watch.stepStarted(step);
      yield { type: 'stepStarted', step, episodes: episodesPerStep };

      const collected = yield* collect(scope, step);
      const { fresh, batch } = advantages(recipe, collected.sampled.kept, policyVersion);
      // the engine collects the next max_staleness steps from the policy it serves while this one trains
      collector.runAhead(step);
      const updated = yield* update(scope, step, batch);
      if (updated.trained) policyVersion = updated.trained.policyVersion;
      const synced = yield* sync(scope, step, policyVersion, updated.trained !== undefined);
      const { metrics, recordedAt } = await record(scope, {
        step,
        policyVersion,
        collected,
        fresh,
        batch,
        trainerMetrics: updated.trained?.metrics ?? {},
        transfer: synced.transfer,
        probe: synced.probe,
        seconds: { collect: collected.seconds, update: updated.seconds, sync: synced.seconds },
        // the step's time includes its generation, even where that ran during the eval before it
        startedAt: step === 1 && firstCollectedAt !== undefined ? firstCollectedAt : startedAt,
        previousRecordedAt,
      });
      previousRecordedAt = recordedAt;
      trainingSeconds += (recordedAt - startedAt) / 1000;
      if (train.time_budget_s !== undefined && trainingSeconds >= train.time_budget_s) lastStep = step;
      watch.stepFinished(updated.trained !== undefined);
      yield { type: 'stepFinished', step, metrics };
      if (fresh.dropped.length > 0)
        yield {
          type: 'warning',
          message: `step ${step}: ${fresh.dropped.length} group(s) sampled more than ${recipe.rollout.max_staleness} policy version(s) back were dropped`,
        };
      if (!updated.trained)
        yield { type: 'warning', message: `step ${step}: no group had a learning signal; nothing trained` };

      if (train.eval_every > 0 && step % train.eval_every === 0 && step < lastStep)
        yield* runEval(ctx, watch, stepName(step), step, policyVersion);
      if ((train.save_every > 0 && step % train.save_every === 0) || step === lastStep) {
        const checkpointDir = store.checkpointDir(step);
        await watch.wait('trainer', `save checkpoint ${stepName(step)}`, () => ctx.trainer.save(checkpointDir));
        await writeDataState(checkpointDir, collected.dataState);
        await store.commitCheckpoint(step, train.keep_checkpoints);
        yield { type: 'checkpointSaved', step, path: checkpointDir };
      }
    }
    if (lastStep < train.steps)
      yield {
        type: 'warning',
        message: `train.time_budget_s (${train.time_budget_s} s) spent after step ${lastStep} of ${train.steps}`,
      };
    if (train.eval_after && !signal.aborted) yield* runEval(ctx, watch, stepName(lastStep), lastStep, policyVersion);
  } finally {
    const discarded = await collector.close();
    if (discarded > 0)
      yield {
        type: 'warning',
        message: `${discarded} episode(s) collected ahead for steps that did not train were discarded`,
      };
  }
}

async function* runEval(
  ctx: TrainingContext,
  watch: StallWatch,
  label: string,
  step: number,
  policyVersion: number,
  gate?: EpisodeGate,
): AsyncGenerator<RunEvent> {
  if (ctx.evalTasks.length === 0 || ctx.recordedEvals?.has(label)) return;
  yield { type: 'evalStarted', label, tasks: ctx.evalTasks.length };
  const { recipe } = ctx;
  const channel = new EventChannel<RunEvent>();
  watch.evalStarted(label, ctx.evalTasks.length);
  let summary: EvalSummary;
  try {
    summary = yield* channel.drainUntil(
      evaluate(ctx.kit, ctx.evalTasks, {
        ...EVAL_DECODING,
        split: recipe.dataset.eval_split,
        samples: 1,
        concurrency: recipe.rollout.concurrency,
        seed: recipe.seed,
        label,
        step,
        policyVersion,
        outDir: join(ctx.store.evalDir, label),
        signal: ctx.signal,
        onEpisode: (_done, _total, rollout) => watch.evalEpisodeFinished(rollout.episode.stats.wallMs),
        lost: ctx.lost,
        ...(gate ? { gate } : {}),
      }),
    );
  } finally {
    watch.evalFinished();
  }
  await ctx.store.appendMetrics({ kind: 'eval', step, at: new Date().toISOString(), ...summary });
  yield { type: 'evalFinished', label, step, summary };
}
