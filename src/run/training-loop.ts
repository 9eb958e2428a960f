/**
 * The `atk run` loop, as on the whiteboard: for each step collect, score, advantage, update,
 * sync, record. Everything else (episodes, rewards, the trainer, the engine, files) is one call away.
 */
import { join } from 'node:path';
import { assembleBatch, type GroupMember } from '../algorithms/batch.js';
import type { ResolvedAlgorithm } from '../recipe/presets.js';
import type { Task } from '../datasets/types.js';
import type { TokenTrajectory } from '../tokens/trajectory.js';
import { EventChannel } from '../util/event-channel.js';
import { stepCollector, type EpisodeGate } from '../rollout/async-collector.js';
import { collectJournal } from '../rollout/collect-journal.js';
import { collectRollout, referenceRollout, rolloutOnThrow, type EpisodeKit, type Rollout } from '../rollout/collect.js';
import { evaluate, type EvalOptions } from './evaluate.js';
import type { RunEvent, StepMetrics } from './events.js';
import type { PolicySync, PolicyTrainer } from '../policy/policy.js';
import { stepName } from '../runs/index.js';
import type { RunStore } from './run-store.js';
import { runGroups } from '../rollout/scheduler.js';
import { formatStall, StallWatch } from '../rollout/stall-watch.js';
import { filterStale, policyClock } from '../rollout/staleness.js';
import { overlapFigures, stepMetrics, trajectoryRecord } from './step-record.js';
import { episodeSeed, tasksForStep } from '../rollout/task-stream.js';
import { watchedKit } from '../rollout/watched-kit.js';

export interface TrainingPlan {
  readonly seed: number;
  readonly steps: number;
  /** Training seconds (steps only) after which the step in progress is the last (`train.time_budget_s`). */
  readonly timeBudgetSeconds?: number;
  readonly tasksPerStep: number;
  readonly groupSize: number;
  readonly concurrency: number;
  /** Steps collected ahead of the one training (rollout.max_staleness); 0 = collect, train, sync in turn. */
  readonly maxStaleness: number;
  readonly sampling: Sampling;
  /** The first k episodes of each group decode as eval does (`rollout.greedy_per_group`); the rest use `sampling`. */
  readonly greedyPerGroup: number;
  readonly onFailure: 'zero' | 'exclude';
  readonly algorithm: ResolvedAlgorithm;
  readonly evalEvery: number;
  readonly evalBefore: boolean;
  readonly evalAfter: boolean;
  readonly saveEvery: number;
  readonly keepCheckpoints: number;
  readonly eval: Omit<EvalOptions, 'label' | 'step' | 'policyVersion'>;
}

export interface Sampling {
  readonly temperature: number;
  readonly topP: number;
  readonly topK: number;
}

export interface TrainingContext {
  readonly plan: TrainingPlan;
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
  /** Labels of the evals a resumed run already recorded (the eval before training, or after the last step), so they are not repeated. */
  readonly recordedEvals?: ReadonlySet<string>;
  readonly signal: AbortSignal;
  /** Rejects once a placed trainer or engine is lost (cluster launchers): the step waiting on rollouts fails with it. */
  readonly lost?: Promise<never> | undefined;
}

/** How often a running step is checked for a stall. */
const STALL_CHECK_MS = 5_000;

/** Run the training loop, yielding what happens as events; a stalled step is reported as a warning naming what it waits on. */
export async function* trainingLoop(context: TrainingContext): AsyncGenerator<RunEvent> {
  const watch = new StallWatch();
  const stalls = new EventChannel<RunEvent>();
  const checker = setInterval(() => {
    const report = watch.check();
    if (report) stalls.push({ type: 'warning', message: formatStall(report) });
  }, STALL_CHECK_MS).unref();
  try {
    yield* loop({ ...context, kit: watchedKit(context.kit, watch) }, watch, stalls);
  } finally {
    clearInterval(checker);
  }
}

async function* loop(
  ctx: TrainingContext,
  watch: StallWatch,
  channel: EventChannel<RunEvent>,
): AsyncGenerator<RunEvent> {
  const { plan, store, signal } = ctx;
  let policyVersion = ctx.startPolicyVersion;
  // The version the engine serves, read at every engine request so each turn records who sampled it.
  const served = policyClock(policyVersion);
  const journal = collectJournal(store.dir);
  const collector = stepCollector({
    collect: async (step, gate) => {
      await journal.started(step, ctx.trainTasks.length === 0 ? 0 : plan.tasksPerStep * plan.groupSize);
      return collectStep(ctx, step, () => served.served, channel, gate);
    },
    maxStaleness: plan.maxStaleness,
    lastStep: plan.steps,
    concurrency: plan.concurrency,
    signal,
  });
  yield {
    type: 'runStarted',
    runDir: store.dir,
    startStep: ctx.startStep,
    totalSteps: plan.steps,
    resumed: ctx.startStep > 0,
  };
  try {
    if (ctx.startStep === 0 && plan.evalBefore) {
      // The eval before training reads the weights the first step samples from: collect that step
      // alongside it, in the same slots, so each fills the engine's batch where the other tails off.
      collector.begin(1);
      yield* runEval(ctx, stepName(0), 0, policyVersion, collector.share);
    }
    let sinceLastStep = performance.now();
    // the step that ends training: plan.steps, or the one that spends the time budget
    let lastStep = plan.steps;
    let trainingSeconds = 0;

    for (let step = ctx.startStep + 1; step <= lastStep; step++) {
      if (signal.aborted) return;
      const stepStart = performance.now();
      watch.stepStarted(step);
      yield {
        type: 'stepStarted',
        step,
        episodes: ctx.trainTasks.length === 0 ? 0 : plan.tasksPerStep * plan.groupSize,
      };

      // collect + score (with max_staleness > 0 mostly done while earlier steps trained)
      const taken = collector.take(step);
      const groups: Rollout[][] = yield* channel.drainUntil(ctx.lost ? Promise.race([taken, ctx.lost]) : taken);
      const generationSeconds = (performance.now() - stepStart) / 1000;
      const fresh = filterStale(groups, policyVersion, plan.maxStaleness);

      // advantage
      const batch = assembleBatch(
        fresh.kept.map((g) => g.map((r) => asGroupMember(r, plan.onFailure))),
        plan.algorithm,
      );

      // update, while the engine collects the next max_staleness steps from the policy it serves
      collector.runAhead(step);
      const trainStart = performance.now();
      const trained =
        batch.sequences.length > 0
          ? yield* channel.drainUntil(watch.wait('trainer', `train step ${step}`, () => ctx.trainer.trainStep(batch)))
          : undefined;
      const trainSeconds = (performance.now() - trainStart) / 1000;
      if (trained) policyVersion = trained.policyVersion;

      // sync
      const syncStart = performance.now();
      const checkpointDir = store.checkpointDir(step);
      if (trained)
        yield* channel.drainUntil(
          watch.wait('weight sync', `sync policy ${policyVersion}`, () =>
            ctx.engine.sync(policyVersion, checkpointDir),
          ),
        );
      served.advance(policyVersion);
      const syncSeconds = (performance.now() - syncStart) / 1000;
      const transfer = trained ? ctx.engine.lastTransfer : undefined;

      // record
      const now = performance.now();
      const wallSeconds = (now - sinceLastStep) / 1000;
      sinceLastStep = now;
      trainingSeconds += (now - stepStart) / 1000;
      if (plan.timeBudgetSeconds !== undefined && trainingSeconds >= plan.timeBudgetSeconds) lastStep = step;
      const metrics: StepMetrics = stepMetrics({
        step,
        policyVersion,
        groups,
        batch,
        trainerMetrics: trained?.metrics ?? {},
        seconds: {
          generation: generationSeconds,
          train: trainSeconds,
          sync: syncSeconds,
          step: (now - stepStart) / 1000,
        },
        overlap: overlapFigures(fresh, collector.activity().busySeconds, trainSeconds + syncSeconds, wallSeconds),
        transfer,
      });
      const batchIndex = new Map(fresh.kept.map((group, i) => [group, i]));
      await store.writeTrajectories(
        step,
        groups
          .flat()
          .map((r) =>
            trajectoryRecord(r, step, batch.advantages[batchIndex.get(groups[r.group]!) ?? -1]?.[r.sample] ?? null),
          ),
      );
      await store.appendMetrics(metrics);
      watch.stepFinished();
      yield { type: 'stepFinished', step, metrics };
      if (fresh.dropped.length > 0)
        yield {
          type: 'warning',
          message: `step ${step}: ${fresh.dropped.length} group(s) sampled more than ${plan.maxStaleness} policy version(s) back were dropped`,
        };
      if (!trained) yield { type: 'warning', message: `step ${step}: no group had a learning signal; nothing trained` };

      if (plan.evalEvery > 0 && step % plan.evalEvery === 0 && step < lastStep)
        yield* runEval(ctx, stepName(step), step, policyVersion);
      if ((plan.saveEvery > 0 && step % plan.saveEvery === 0) || step === lastStep) {
        await watch.wait('trainer', `save checkpoint ${stepName(step)}`, () => ctx.trainer.save(checkpointDir));
        await store.commitCheckpoint(step, plan.keepCheckpoints);
        yield { type: 'checkpointSaved', step, path: checkpointDir };
      }
    }
    if (lastStep < plan.steps)
      yield {
        type: 'warning',
        message: `train.time_budget_s (${plan.timeBudgetSeconds} s) spent after step ${lastStep} of ${plan.steps}`,
      };
    if (plan.evalAfter && !signal.aborted) yield* runEval(ctx, stepName(lastStep), lastStep, policyVersion);
  } finally {
    const discarded = await collector.close();
    if (discarded > 0)
      yield {
        type: 'warning',
        message: `${discarded} episode(s) collected ahead for steps that did not train were discarded`,
      };
  }
}

async function collectStep(
  ctx: TrainingContext,
  step: number,
  servedVersion: () => number,
  channel: EventChannel<RunEvent>,
  gate: EpisodeGate,
): Promise<Rollout[][]> {
  const { plan } = ctx;
  const tasks = tasksForStep(ctx.trainTasks, plan.seed, step - 1, plan.tasksPerStep);
  if (plan.algorithm.name === 'sft')
    return tasks.map((task, group) => [referenceRollout(ctx.kit, task, group, servedVersion())]);
  const total = tasks.length * plan.groupSize;
  const greedy: Sampling = { temperature: plan.eval.temperature, topP: plan.eval.topP, topK: plan.eval.topK };
  let done = 0;
  return runGroups(
    tasks,
    plan.groupSize,
    plan.concurrency,
    ({ task, group, sample }) =>
      gate((signal) =>
        collectRollout(ctx.kit, {
          task,
          group,
          sample,
          seed: episodeSeed(plan.seed, step, group, sample),
          ...(sample < plan.greedyPerGroup ? greedy : plan.sampling),
          policyVersion: servedVersion,
          signal,
        }),
      ),
    (_slot, rollout) =>
      channel.push({
        type: 'episodeFinished',
        step,
        done: ++done,
        total,
        reward: rollout.reward,
        failed: rollout.failed,
      }),
    (slot, error) => rolloutOnThrow(servedVersion())(slot, error),
  );
}

function asGroupMember(rollout: Rollout, onFailure: 'zero' | 'exclude'): GroupMember {
  const tokens = (t: TokenTrajectory): GroupMember['tokens'] => ({
    token_ids: t.ids,
    loss_mask: t.mask(),
    logprobs: t.logprobsFull().map((l) => l ?? 0),
  });
  // A gateway episode whose agent rewrote its history has earlier segments; each is trained with the episode's advantage.
  const prior = rollout.episode.priorSegments ?? [];
  return {
    reward: rollout.reward,
    success: rollout.success,
    excluded: rollout.failed && onFailure === 'exclude',
    tokens: tokens(rollout.episode.trajectory),
    ...(prior.length > 0 ? { priorTokens: prior.map((s) => tokens(s.trajectory)) } : {}),
  };
}

async function* runEval(
  ctx: TrainingContext,
  label: string,
  step: number,
  policyVersion: number,
  gate?: EpisodeGate,
): AsyncGenerator<RunEvent> {
  if (ctx.evalTasks.length === 0 || ctx.recordedEvals?.has(label)) return;
  yield { type: 'evalStarted', label, tasks: ctx.evalTasks.length };
  const channel = new EventChannel<RunEvent>();
  const summary = yield* channel.drainUntil(
    evaluate(ctx.kit, ctx.evalTasks, {
      ...ctx.plan.eval,
      label,
      step,
      policyVersion,
      outDir: join(ctx.store.evalDir, label),
      signal: ctx.signal,
      ...(gate ? { gate } : {}),
    }),
  );
  await ctx.store.appendMetrics({ kind: 'eval', step, at: new Date().toISOString(), ...summary });
  yield { type: 'evalFinished', label, step, summary };
}
