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
import type { DataState, StepTurns } from '../rollout/data-stream.js';
import { sampleStep, type SampledStep } from '../rollout/dynamic-sampling.js';
import { everyEpisodeFailedInEngine } from '../rollout/engine-failure.js';
import { runGroups } from '../rollout/scheduler.js';
import type { StallWatch } from '../rollout/stall-watch.js';
import { filterStale, type StalenessVerdict } from '../rollout/staleness.js';
import { episodeSeed } from '../rollout/task-stream.js';
import type { TokenTrajectory } from '../tokens/trajectory.js';
import type { EventChannel } from '../util/event-channel.js';
import type { RunEvent, StepMetrics } from './events.js';
import type { PolicySync, PolicyTrainer } from '../policy/policy.js';
import type { RunStore } from './run-store.js';
import { applyNegativeControl, NEGATIVE_CONTROL_ENV, negativeControl } from './negative-control.js';
import { overlapFigures, samplingFigures, stepMetrics, trajectoryRecord } from './step-record.js';

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
  readonly collector: StepCollector<CollectedStep>;
  /** The training data stream, handed to each step's collection in turn. */
  readonly draws: StepTurns;
  /** Where each round of a step's episodes is noted as it starts (logs/collect.jsonl), for a resume to count what it discards. */
  readonly journal: { started(step: number, episodes: number): Promise<void> };
  readonly served: ServedPolicy;
  /** Rejects once the trainer or an engine is lost (ended, or stopped answering): the step waiting on rollouts fails with it. */
  readonly lost?: Promise<never> | undefined;
}

/** A step's collection: its sampled groups, what dynamic sampling and the curriculum did, and where the data stream stood after it. */
export interface CollectedStep {
  readonly sampled: SampledStep<Rollout>;
  readonly dataState: DataState;
}

/**
 * collect + score: the step's groups, each episode scored as it ended (with max_staleness > 0, mostly run
 * while earlier steps trained); with dynamic sampling, refilled until enough have a reward spread.
 * @throws ProviderError when every episode failed in the engine, or the trainer or an engine was lost.
 */
export async function* collect(
  scope: StepScope,
  step: number,
): AsyncGenerator<RunEvent, CollectedStep & { seconds: number }> {
  const started = performance.now();
  const taken = scope.collector.take(step);
  const collected = yield* scope.channel.drainUntil(scope.lost ? Promise.race([taken, scope.lost]) : taken);
  const { sampled } = collected;
  const broken = everyEpisodeFailedInEngine(sampled.groups.flat(), `step ${step}`);
  if (broken) throw broken;
  if (sampled.ranOut)
    yield {
      type: 'warning',
      message: `step ${step}: dynamic sampling found ${sampled.kept.length} of ${scope.recipe.train.tasks_per_step} groups with a reward spread in ${sampled.rounds} round(s) (algorithm.dynamic_sampling.max_rounds); training on those`,
    };
  const control = negativeControl();
  if (control)
    yield {
      type: 'warning',
      message: `step ${step}: ${NEGATIVE_CONTROL_ENV}=${control}: this step is trained wrongly on purpose (a negative control)`,
    };
  return { ...collected, seconds: elapsed(started) };
}

/** advantage: groups sampled too many versions back are dropped, the rest become the token batch. */
export function advantages(
  recipe: Pick<TrainingRecipe, 'rollout' | 'algorithm'>,
  groups: readonly Rollout[][],
  trainerVersion: number,
): { fresh: StalenessVerdict; batch: AssembledBatch } {
  const fresh = filterStale(groups, trainerVersion, recipe.rollout.max_staleness);
  const members = fresh.kept.map((g) => g.map((r) => asGroupMember(r, recipe.rollout.on_failure)));
  const control = negativeControl();
  const trained = control ? applyNegativeControl(members, control, trainerVersion) : members;
  return { fresh, batch: assembleBatch(trained, recipe.algorithm) };
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

/**
 * sync: the trained weights into the engine, checked against the trainer's by the sync probe before any
 * episode samples from them; from then on its episodes are stamped with the new version.
 */
export async function* sync(
  scope: StepScope,
  step: number,
  policyVersion: number,
  trained: boolean,
): AsyncGenerator<RunEvent, { transfer?: SyncTransfer; probe?: number; seconds: number }> {
  const started = performance.now();
  if (trained)
    yield* scope.channel.drainUntil(
      scope.watch.wait('weight sync', `sync policy ${policyVersion}`, () =>
        scope.engine.sync(policyVersion, scope.store.checkpointDir(step)),
      ),
    );
  scope.served.advance(policyVersion);
  const transfer = trained ? scope.engine.lastTransfer : undefined;
  const probe = trained ? scope.engine.lastProbe : undefined;
  return { ...(transfer ? { transfer } : {}), ...(probe === undefined ? {} : { probe }), seconds: elapsed(started) };
}

/** What a step did, for its record. */
export interface StepOutcome {
  readonly step: number;
  readonly policyVersion: number;
  /** Every group the step sampled, kept or not, and what its sampling did. */
  readonly collected: CollectedStep;
  readonly fresh: StalenessVerdict;
  readonly batch: AssembledBatch;
  readonly trainerMetrics: Readonly<Record<string, number>>;
  readonly transfer?: SyncTransfer | undefined;
  /** The sync probe's largest logprob gap after the step's sync. */
  readonly probe?: number | undefined;
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
  const { step, fresh, batch, seconds } = outcome;
  const { groups } = outcome.collected.sampled;
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
    probe: outcome.probe,
    sampling: samplingFigures(outcome.collected, scope.recipe),
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

/**
 * Collects one step (the step collector's `collect`): at its turn at the data stream, its tasks drawn and
 * their groups sampled, each episode through `gate`, in rounds while dynamic sampling refills.
 */
export async function collectStep(scope: StepScope, step: number, gate: EpisodeGate): Promise<CollectedStep> {
  const { recipe } = scope;
  const { result: sampled, state } = await scope.draws.turn(step, (stream) =>
    sampleStep({
      batchSize: recipe.train.tasks_per_step,
      maxRounds: recipe.algorithm.dynamic_sampling?.max_rounds,
      onFailure: recipe.rollout.on_failure,
      stream,
      run: sampleRound(scope, step, gate),
    }),
  );
  return { sampled, dataState: state };
}

/** Samples one round of a step's groups: a group per task, numbered on from `firstGroup`. */
function sampleRound(
  scope: StepScope,
  step: number,
  gate: EpisodeGate,
): (tasks: readonly Task[], firstGroup: number) => Promise<Rollout[][]> {
  const { recipe, kit } = scope;
  const servedVersion = scope.served.clock;
  const size = groupSize(recipe);
  const { rollout } = recipe;
  const sampling = { temperature: rollout.temperature, topP: rollout.top_p, topK: rollout.top_k };
  let done = 0;
  let total = 0;
  return async (tasks, firstGroup) => {
    total += tasks.length * size;
    await scope.journal.started(step, tasks.length * size);
    if (recipe.algorithm.name === 'sft')
      return tasks.map((task, i) => [referenceRollout(kit, task, firstGroup + i, servedVersion())]);
    return runGroups(
      tasks,
      size,
      rollout.concurrency,
      ({ task, group, sample }) =>
        gate((signal) =>
          collectRollout(kit, {
            task,
            group: firstGroup + group,
            sample,
            seed: episodeSeed(recipe.seed, step, firstGroup + group, sample),
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
      (slot, error) => rolloutOnThrow(servedVersion())({ ...slot, group: firstGroup + slot.group }, error),
    );
  };
}

/** Finish reasons of an episode cut off by a generation limit (algorithm.mask_truncated leaves them out of the loss). */
const TRUNCATED: ReadonlySet<string> = new Set(['truncated', 'maxTotalTokens']);

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
    truncated: TRUNCATED.has(rollout.episode.finishReason),
    tokens: tokens(rollout.episode.trajectory),
    priorTokens: prior.map((s) => tokens(s.trajectory)),
    ...(rollout.teacherLogprobs ? { teacherLogprobs: rollout.teacherLogprobs } : {}),
  };
}

function elapsed(since: number): number {
  return (performance.now() - since) / 1000;
}
