/**
 * The phases of one training step, each a call that returns what it made and how long it took: collect
 * (episodes run and scored), advantages (stale groups dropped, the batch assembled), update (the
 * trainer's step), sync (the new weights into the engine) and record (trajectories and metrics).
 */
import { performance } from 'node:perf_hooks';
import type { ServedPolicy } from '../agent/policy-clock.js';
import { assembleBatch, type AssembledBatch, type GroupMember } from '../algorithms/batch.js';
import type { Task } from '../datasets/types.js';
import type { SyncTransfer } from '../engines/sync/index.js';
import type { ResolvedRecipe } from '../recipe/index.js';
import type { StepCollector, EpisodeGate } from '../rollout/async-collector.js';
import { collectRollout, referenceRollout, rolloutOnThrow, type EpisodeKit, type Rollout } from '../rollout/collect.js';
import { runGroups } from '../rollout/scheduler.js';
import type { StallWatch } from '../rollout/stall-watch.js';
import { filterStale, type StalenessVerdict } from '../rollout/staleness.js';
import { episodeSeed, tasksForStep } from '../rollout/task-stream.js';
import type { TokenTrajectory } from '../tokens/trajectory.js';
import type { EventChannel } from '../util/event-channel.js';
import type { RunEvent, StepMetrics } from './events.js';
import type { PolicySync, PolicyTrainer } from '../policy/policy.js';
import type { RunStore } from './run-store.js';
import { overlapFigures, stepMetrics, trajectoryRecord } from './step-record.js';

/** What the loop reads off the resolved recipe: its own sections, in its own keys. */
export type TrainingRecipe = Pick<ResolvedRecipe, 'seed' | 'train' | 'rollout' | 'algorithm' | 'dataset'>;

/** How evals decode (greedy), and so the first `rollout.greedy_per_group` episodes of each group. */
export const EVAL_DECODING = { temperature: 0, topP: 1, topK: -1 } as const;

/** Episodes per group: an `sft` step trains on one reference conversation per task. */
export function groupSize(recipe: TrainingRecipe): number {
  return recipe.algorithm.name === 'sft' ? 1 : recipe.algorithm.group_size;
}

/** Everything the phases of a step share. */
export interface StepScope {
  readonly recipe: TrainingRecipe;
  readonly trainTasks: readonly Task[];
  readonly kit: EpisodeKit;
  readonly trainer: PolicyTrainer;
  readonly engine: PolicySync;
  readonly store: RunStore;
  readonly watch: StallWatch;
  /** Events from work in flight (episodes finishing, stall warnings), yielded while a phase waits. */
  readonly channel: EventChannel<RunEvent>;
  readonly collector: StepCollector;
  readonly served: ServedPolicy;
  /** Rejects once a placed trainer or engine is lost: the step waiting on rollouts fails with it. */
  readonly lost?: Promise<never> | undefined;
}

/** collect + score: the step's groups, each episode scored as it ended (with max_staleness > 0, mostly run while earlier steps trained). */
export async function* collect(
  scope: StepScope,
  step: number,
): AsyncGenerator<RunEvent, { groups: Rollout[][]; seconds: number }> {
  const started = performance.now();
  const taken = scope.collector.take(step);
  const groups = yield* scope.channel.drainUntil(scope.lost ? Promise.race([taken, scope.lost]) : taken);
  return { groups, seconds: elapsed(started) };
}

/** advantage: groups sampled too many versions back are dropped, the rest become the token batch. */
export function advantages(
  recipe: Pick<TrainingRecipe, 'rollout' | 'algorithm'>,
  groups: readonly Rollout[][],
  trainerVersion: number,
): { fresh: StalenessVerdict; batch: AssembledBatch } {
  const fresh = filterStale(groups, trainerVersion, recipe.rollout.max_staleness);
  const members = fresh.kept.map((g) => g.map((r) => asGroupMember(r, recipe.rollout.on_failure)));
  return { fresh, batch: assembleBatch(members, recipe.algorithm) };
}

/** update: one trainer step on the batch (none when no group had a learning signal). */
export async function* update(
  scope: StepScope,
  step: number,
  batch: AssembledBatch,
): AsyncGenerator<RunEvent, { trained?: Awaited<ReturnType<PolicyTrainer['trainStep']>>; seconds: number }> {
  const started = performance.now();
  if (batch.sequences.length === 0) return { seconds: elapsed(started) };
  const trained = yield* scope.channel.drainUntil(
    scope.watch.wait('trainer', `train step ${step}`, () => scope.trainer.trainStep(batch)),
  );
  return { trained, seconds: elapsed(started) };
}

/** sync: the trained weights into the engine; from then on its episodes are stamped with the new version. */
export async function* sync(
  scope: StepScope,
  step: number,
  policyVersion: number,
  trained: boolean,
): AsyncGenerator<RunEvent, { transfer?: SyncTransfer; seconds: number }> {
  const started = performance.now();
  if (trained)
    yield* scope.channel.drainUntil(
      scope.watch.wait('weight sync', `sync policy ${policyVersion}`, () =>
        scope.engine.sync(policyVersion, scope.store.checkpointDir(step)),
      ),
    );
  scope.served.advance(policyVersion);
  const transfer = trained ? scope.engine.lastTransfer : undefined;
  return { ...(transfer ? { transfer } : {}), seconds: elapsed(started) };
}

/** What a step did, for its record. */
export interface StepOutcome {
  readonly step: number;
  readonly policyVersion: number;
  readonly groups: readonly Rollout[][];
  readonly fresh: StalenessVerdict;
  readonly batch: AssembledBatch;
  readonly trainerMetrics: Readonly<Record<string, number>>;
  readonly transfer?: SyncTransfer | undefined;
  readonly seconds: { readonly collect: number; readonly update: number; readonly sync: number };
  /** When the step started, and when the previous one was recorded (performance.now()). */
  readonly startedAt: number;
  readonly previousRecordedAt: number;
}

/** record: the step's trajectories (each with its advantage) and its metrics line; the step's time ends as it starts. */
export async function record(
  scope: StepScope,
  outcome: StepOutcome,
): Promise<{ metrics: StepMetrics; recordedAt: number }> {
  const now = performance.now();
  const { step, groups, fresh, batch, seconds } = outcome;
  const metrics = stepMetrics({
    step,
    policyVersion: outcome.policyVersion,
    groups,
    batch,
    trainerMetrics: outcome.trainerMetrics,
    seconds: {
      generation: seconds.collect,
      train: seconds.update,
      sync: seconds.sync,
      step: (now - outcome.startedAt) / 1000,
    },
    overlap: overlapFigures(
      fresh,
      scope.collector.activity().busySeconds,
      seconds.update + seconds.sync,
      (now - outcome.previousRecordedAt) / 1000,
    ),
    transfer: outcome.transfer,
  });
  const batchIndex = new Map(fresh.kept.map((group, i) => [group, i]));
  const advantage = (r: Rollout): number | null =>
    batch.advantages[batchIndex.get(groups[r.group]!) ?? -1]?.[r.sample] ?? null;
  await scope.store.writeTrajectories(
    step,
    groups.flat().map((r) => trajectoryRecord(r, step, advantage(r))),
  );
  await scope.store.appendMetrics(metrics);
  await scope.store.pruneTrajectories(step, scope.recipe.train.keep_trajectories);
  return { metrics, recordedAt: now };
}

/** Collects one step's groups (the step collector's `collect`): its tasks from the stream, each episode through `gate`. */
export function collectStep(scope: StepScope, step: number, gate: EpisodeGate): Promise<Rollout[][]> {
  const { recipe, kit } = scope;
  const servedVersion = scope.served.clock;
  const tasks = tasksForStep(scope.trainTasks, recipe.seed, step - 1, recipe.train.tasks_per_step);
  if (recipe.algorithm.name === 'sft')
    return Promise.resolve(tasks.map((task, group) => [referenceRollout(kit, task, group, servedVersion())]));
  const size = groupSize(recipe);
  const total = tasks.length * size;
  const { rollout } = recipe;
  const sampling = { temperature: rollout.temperature, topP: rollout.top_p, topK: rollout.top_k };
  let done = 0;
  return runGroups(
    tasks,
    size,
    rollout.concurrency,
    ({ task, group, sample }) =>
      gate((signal) =>
        collectRollout(kit, {
          task,
          group,
          sample,
          seed: episodeSeed(recipe.seed, step, group, sample),
          ...(sample < rollout.greedy_per_group ? EVAL_DECODING : sampling),
          policyVersion: servedVersion,
          signal,
        }),
      ),
    (_slot, finished) =>
      scope.channel.push({
        type: 'episodeFinished',
        step,
        done: ++done,
        total,
        reward: finished.reward,
        failed: finished.failed,
      }),
    (slot, error) => rolloutOnThrow(servedVersion())(slot, error),
  );
}

/**
 * A rollout as the batch sees it: its tokens, reward and whether `rollout.on_failure: exclude` leaves it
 * out. A gateway episode whose agent rewrote its history has earlier segments; each is trained with the
 * episode's advantage.
 */
export function asGroupMember(rollout: Rollout, onFailure: 'zero' | 'exclude'): GroupMember {
  const tokens = (t: TokenTrajectory): GroupMember['tokens'] => ({
    token_ids: t.ids,
    loss_mask: t.mask(),
    logprobs: t.logprobsFull().map((l) => l ?? 0),
  });
  const prior = rollout.episode.priorSegments ?? [];
  return {
    reward: rollout.reward,
    success: rollout.success,
    excluded: rollout.failed && onFailure === 'exclude',
    tokens: tokens(rollout.episode.trajectory),
    priorTokens: prior.map((s) => tokens(s.trajectory)),
  };
}

function elapsed(since: number): number {
  return (performance.now() - since) / 1000;
}
