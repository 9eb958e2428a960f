/**
 * The `atk run` loop, as on the whiteboard: for each step collect, score, advantage, update,
 * sync, record. Everything else (episodes, rewards, the trainer, the engine, files) is one call away.
 */
import { join } from 'node:path';
import { assembleBatch, type GroupMember } from '../algorithms/batch.js';
import type { ResolvedAlgorithm } from '../algorithms/presets.js';
import type { Task } from '../datasets/types.js';
import type { TokenTrajectory } from '../tokens/trajectory.js';
import { EventChannel } from '../util/event-channel.js';
import { collectRollout, referenceRollout, type EpisodeKit, type Rollout } from './collect.js';
import { evaluate, type EvalOptions } from './evaluate.js';
import type { RunEvent, StepMetrics } from './events.js';
import type { PolicySync, PolicyTrainer } from './policy.js';
import { stepName } from '../runs/index.js';
import type { RunStore } from './run-store.js';
import { runGroups } from './scheduler.js';
import { stepMetrics, trajectoryRecord } from './step-record.js';
import { episodeSeed, tasksForStep } from './task-stream.js';

export interface TrainingPlan {
  readonly seed: number;
  readonly steps: number;
  readonly tasksPerStep: number;
  readonly groupSize: number;
  readonly concurrency: number;
  readonly sampling: { readonly temperature: number; readonly topP: number; readonly topK: number };
  readonly onFailure: 'zero' | 'exclude';
  readonly algorithm: ResolvedAlgorithm;
  readonly evalEvery: number;
  readonly evalBefore: boolean;
  readonly evalAfter: boolean;
  readonly saveEvery: number;
  readonly keepCheckpoints: number;
  readonly eval: Omit<EvalOptions, 'label' | 'step' | 'policyVersion'>;
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
}

/** Run the training loop, yielding what happens as events. */
export async function* trainingLoop(ctx: TrainingContext): AsyncGenerator<RunEvent> {
  const { plan, store, signal } = ctx;
  let policyVersion = ctx.startPolicyVersion;
  yield { type: 'runStarted', runDir: store.dir, startStep: ctx.startStep, totalSteps: plan.steps, resumed: ctx.startStep > 0 };
  if (ctx.startStep === 0 && plan.evalBefore) yield* runEval(ctx, stepName(0), 0, policyVersion);

  for (let step = ctx.startStep + 1; step <= plan.steps; step++) {
    if (signal.aborted) return;
    const stepStart = performance.now();
    const tasks = tasksForStep(ctx.trainTasks, plan.seed, step - 1, plan.tasksPerStep);
    yield { type: 'stepStarted', step, episodes: tasks.length * plan.groupSize };

    // collect + score
    const channel = new EventChannel<RunEvent>();
    const groups: Rollout[][] = yield* channel.drainUntil(collectStep(ctx, step, tasks, policyVersion, channel));
    const generationSeconds = (performance.now() - stepStart) / 1000;

    // advantage
    const batch = assembleBatch(groups.map((g) => g.map((r) => asGroupMember(r, plan.onFailure))), plan.algorithm);

    // update
    const trainStart = performance.now();
    const trained = batch.sequences.length > 0 ? await ctx.trainer.trainStep(batch) : undefined;
    const trainSeconds = (performance.now() - trainStart) / 1000;
    if (trained) policyVersion = trained.policyVersion;

    // sync
    const syncStart = performance.now();
    const checkpointDir = store.checkpointDir(step);
    if (trained) await ctx.engine.sync(policyVersion, checkpointDir);
    const syncSeconds = (performance.now() - syncStart) / 1000;

    // record
    const metrics: StepMetrics = stepMetrics({
      step,
      policyVersion,
      groups,
      batch,
      trainerMetrics: trained?.metrics ?? {},
      seconds: { generation: generationSeconds, train: trainSeconds, sync: syncSeconds, step: (performance.now() - stepStart) / 1000 },
    });
    await store.writeTrajectories(step, groups.flat().map((r) => trajectoryRecord(r, step, batch.advantages[r.group]?.[r.sample] ?? null)));
    await store.appendMetrics(metrics);
    yield { type: 'stepFinished', step, metrics };
    if (!trained) yield { type: 'warning', message: `step ${step}: no group had a learning signal; nothing trained` };

    if (plan.evalEvery > 0 && step % plan.evalEvery === 0 && step < plan.steps) yield* runEval(ctx, stepName(step), step, policyVersion);
    if ((plan.saveEvery > 0 && step % plan.saveEvery === 0) || step === plan.steps) {
      await ctx.trainer.save(checkpointDir);
      await store.commitCheckpoint(step, plan.keepCheckpoints);
      yield { type: 'checkpointSaved', step, path: checkpointDir };
    }
  }
  if (plan.evalAfter && !signal.aborted) yield* runEval(ctx, stepName(plan.steps), plan.steps, policyVersion);
}

async function collectStep(ctx: TrainingContext, step: number, tasks: readonly Task[], policyVersion: number, channel: EventChannel<RunEvent>): Promise<Rollout[][]> {
  const { plan } = ctx;
  if (plan.algorithm.name === 'sft') return tasks.map((task, group) => [referenceRollout(ctx.kit, task, group, policyVersion)]);
  const total = tasks.length * plan.groupSize;
  let done = 0;
  return runGroups(
    tasks,
    plan.groupSize,
    plan.concurrency,
    ({ task, group, sample }) =>
      collectRollout(ctx.kit, {
        task,
        group,
        sample,
        seed: episodeSeed(plan.seed, step, group, sample),
        ...plan.sampling,
        policyVersion,
        signal: ctx.signal,
      }),
    (_slot, rollout) => channel.push({ type: 'episodeFinished', step, done: ++done, total, reward: rollout.reward, failed: rollout.failed }),
  );
}

function asGroupMember(rollout: Rollout, onFailure: 'zero' | 'exclude'): GroupMember {
  const tokens = (t: TokenTrajectory): GroupMember['tokens'] => ({ tokenIds: t.ids, lossMask: t.mask(), logprobs: t.logprobsFull().map((l) => l ?? 0) });
  const prior = rollout.episode.priorSegments ?? [];
  return {
    reward: rollout.reward,
    success: rollout.success,
    excluded: rollout.failed && onFailure === 'exclude',
    tokens: tokens(rollout.episode.trajectory),
    ...(prior.length > 0 ? { priorTokens: prior.map((s) => tokens(s.trajectory)) } : {}),
  };
}

async function* runEval(ctx: TrainingContext, label: string, step: number, policyVersion: number): AsyncGenerator<RunEvent> {
  if (ctx.evalTasks.length === 0 || ctx.recordedEvals?.has(label)) return;
  yield { type: 'evalStarted', label, tasks: ctx.evalTasks.length };
  const channel = new EventChannel<RunEvent>();
  const summary = yield* channel.drainUntil(
    evaluate(ctx.kit, ctx.evalTasks, { ...ctx.plan.eval, label, step, policyVersion, outDir: join(ctx.store.evalDir, label), signal: ctx.signal }),
  );
  await ctx.store.appendMetrics({ kind: 'eval', step, at: new Date().toISOString(), ...summary });
  yield { type: 'evalFinished', label, step, summary };
}
