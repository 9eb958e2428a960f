import type { Tool } from '@strands-agents/sdk';
import { type PolicyClock, policyVersionNow } from '../agent/policy-clock.js';
import type { Task } from '../datasets/types.js';
import type { Engine, EpisodeSampling } from '../engines/types.js';
import type { ComposedReward } from '../rewards/compose.js';
import { overlongPenalty } from '../rewards/overlong.js';
import type { OverlongConfig } from '../recipe/objective-schemas.js';
import type { EpisodeEnv, EpisodeTools } from '../tools/types.js';
import { describeFailure, errorMessage, toChatTools, type EpisodeErrorKind } from '../agent/index.js';
import { CancelledError, InputError } from '../errors/index.js';
import type { ChatMessage, ModelTokenizer } from '../tokens/index.js';
import { failedEpisode, runEpisode, type AgentSpec, type EpisodeResult } from './episode.js';
import { referenceTrajectory } from './reference.js';
import type { ExternalEpisodes } from './external.js';
import type { EpisodeSlot } from './scheduler.js';
import type { WaitRecorder } from './stall-watch.js';
import type { EpisodeUser } from './user-simulation.js';

/** Everything an episode needs that is the same for the whole run. */
export interface EpisodeKit {
  readonly engine: Engine;
  readonly tokenizer: ModelTokenizer;
  readonly tools: readonly EpisodeTools[];
  readonly reward: ComposedReward;
  /** The agent spec without tools and sampling, which vary per episode. */
  readonly agent: Omit<AgentSpec, 'tools' | 'sampling'>;
  readonly systemPrompt: (task: Task) => string | undefined;
  readonly successThreshold: number;
  /** DAPO's soft overlong punishment (reward.overlong), added to each scored episode's reward. */
  readonly overlong?: OverlongConfig;
  readonly timeoutMs: number;
  /** Limit for scoring one episode (`rollout.reward_timeout_s`); none when absent. */
  readonly rewardTimeoutMs?: number;
  /** The simulated user of an episode (the recipe's `user` section); absent for single-turn tasks. */
  readonly user?: (task: Task, env: EpisodeEnv) => EpisodeUser | undefined;
  /** Stops what the tools started for the run (MCP servers); call once when the run ends. */
  readonly close?: () => Promise<void>;
  /**
   * How its episodes run, chosen once when the kit is made: the built-in agent on this thread
   * (`builtInEpisodes`), an agent atk did not build behind the gateway (`externalEpisodes`, the recipe's
   * `agent.external`), or on rollout worker threads (`workerEpisodes`, `rollout.workers`).
   */
  readonly runner: EpisodeRunner;
  /** Where the waits of episodes run on workers (tool calls, the simulated user, the reward) are registered. */
  readonly waits?: WaitRecorder;
}

/** Runs one episode of a kit and scores it. */
export interface EpisodeRunner {
  /**
   * Never throws for what one episode does: anything thrown while it runs and its timeout become a
   * failed rollout with reward 0 and the failing layer and message.
   * @throws CancelledError when the request's signal aborts.
   */
  collect(kit: EpisodeKit, request: EpisodeRequest): Promise<Rollout>;
}

/** Episodes run on worker threads (`rollout.workers`, src/run/rollout-workers.ts). */
export interface RolloutWorkers {
  /**
   * Runs one episode on the least busy worker and scores it there; its engine requests go through
   * `engine` on this thread (the collecting kit's, e.g. watched for stalls; the pool's own when absent),
   * and its tool calls, simulated-user turns and reward are registered in `waits` while they run. A
   * worker that dies fails the episodes it was running (and is started again for the next ones).
   * @throws CancelledError (or the signal's reason) when the request's signal aborts.
   */
  collect(request: EpisodeRequest, engine?: Engine, waits?: WaitRecorder): Promise<Rollout>;
  /** Closes each worker's kit (MCP servers, user engines) and ends the threads. */
  close(): Promise<void>;
}

/** One finished and scored episode: what a trajectory line records. */
export interface Rollout {
  readonly task: Task;
  readonly group: number;
  readonly sample: number;
  /** Policy version the episode started under; each model turn records its own on the trajectory. */
  readonly policyVersion: number;
  readonly reward: number;
  readonly parts: Readonly<Record<string, number>>;
  readonly rewardInfo?: Readonly<Record<string, unknown>>;
  readonly success: boolean;
  /** The episode failed (anything it threw, its timeout, a reward crash): recorded with its reason. */
  readonly failed: boolean;
  readonly error?: string;
  /** The layer that failed, with `error`. */
  readonly errorKind?: EpisodeErrorKind;
  readonly episode: EpisodeResult;
  /**
   * algorithm distill: the teacher's logprob of each token, per segment (the episode's earlier segments,
   * then its trajectory); see teacher-scored.ts.
   */
  readonly teacherLogprobs?: readonly (readonly (number | null)[])[];
}

export interface EpisodeRequest {
  readonly task: Task;
  readonly group: number;
  readonly sample: number;
  readonly seed: number;
  readonly temperature: number;
  readonly topP: number;
  readonly topK: number;
  /** The policy version sampling the episode; a function (the served version) is read at each engine request. */
  readonly policyVersion: PolicyClock;
  readonly signal?: AbortSignal;
}

/**
 * Run one episode and score it, the way the kit runs its episodes. Never throws for what one episode
 * does: anything thrown while it runs (tool set-up, the simulated user, the engine, the template, the
 * parser, the SDK, the reward) and its timeout become a failed rollout with reward 0 and the failing
 * layer and message.
 * @throws CancelledError when the request's signal aborts.
 */
export function collectRollout(kit: EpisodeKit, request: EpisodeRequest): Promise<Rollout> {
  return kit.runner.collect(kit, request);
}

/** Episodes of the built-in agent (a Strands agent speaking token ids) on this thread. */
export const builtInEpisodes: EpisodeRunner = {
  async collect(kit, request) {
    const { task } = request;
    const base = rolloutBase(request);
    const env = episodeEnv(request);
    const systemPrompt = kit.systemPrompt(task);
    let tools: Tool[];
    let user: EpisodeUser | undefined;
    try {
      tools = kit.tools.flatMap((make) => make(env));
    } catch (error) {
      return failedRollout(base, failedEpisode('tool', `tool set-up failed: ${errorMessage(error)}`));
    }
    try {
      user = kit.user?.(task, env);
    } catch (error) {
      return failedRollout(base, failedEpisode('user', `user simulator set-up failed: ${errorMessage(error)}`));
    }
    const episode = await runEpisode({
      task,
      spec: {
        ...kit.agent,
        ...(systemPrompt === undefined ? {} : { systemPrompt }),
        ...(user ? { maxSteps: user.maxSteps, maxToolErrors: user.maxToolErrors } : {}),
        tools,
        sampling: episodeSampling(request),
      },
      engine: kit.engine,
      tokenizer: kit.tokenizer,
      policyVersion: request.policyVersion,
      timeoutMs: kit.timeoutMs,
      env,
      ...(request.signal ? { signal: request.signal } : {}),
      ...(user ? { user: user.respond, ...(user.opening === undefined ? {} : { opening: user.opening }) } : {}),
    });
    return scoreRollout(kit, base, env, episode, user);
  },
};

/** Episodes of an agent atk did not build (`agent.external`), each run behind the gateway. */
export function externalEpisodes(agents: ExternalEpisodes): EpisodeRunner {
  return {
    async collect(kit, request) {
      const base = rolloutBase(request);
      const env = episodeEnv(request);
      const systemPrompt = kit.systemPrompt(request.task);
      let episode: EpisodeResult;
      try {
        episode = await agents.run({
          task: request.task,
          env,
          ...(systemPrompt === undefined ? {} : { systemPrompt }),
          policyVersion: request.policyVersion,
          sampling: episodeSampling(request),
          timeoutMs: kit.timeoutMs,
          ...(request.signal ? { signal: request.signal } : {}),
        });
      } catch (error) {
        if (error instanceof CancelledError) throw error;
        const failure = describeFailure(error, 'agent');
        return failedRollout(base, failedEpisode(failure.kind, failure.message));
      }
      return scoreRollout(kit, base, env, episode);
    },
  };
}

/**
 * Episodes on rollout worker threads (`rollout.workers`): each worker runs `builtInEpisodes` with a kit
 * of its own; engine requests go through the collecting kit's engine on this thread, and the episode's
 * waits are registered in its `waits`.
 */
export function workerEpisodes(workers: RolloutWorkers): EpisodeRunner {
  return {
    collect: (kit, request) =>
      // What reaches here is the worker's thread dying under the episode.
      workers.collect(request, kit.engine, kit.waits).catch((error: unknown) => {
        if (error instanceof CancelledError) throw error;
        return failedRollout(rolloutBase(request), failedEpisode('scheduler', errorMessage(error)));
      }),
  };
}

function rolloutBase(request: EpisodeRequest): Pick<Rollout, 'task' | 'group' | 'sample' | 'policyVersion'> {
  const { task, group, sample } = request;
  return { task, group, sample, policyVersion: policyVersionNow(request.policyVersion) };
}

function episodeEnv(request: EpisodeRequest): EpisodeEnv {
  return {
    episodeId: `${request.group}-${request.sample}`,
    task: request.task,
    state: new Map<string, unknown>(),
    signal: request.signal ?? new AbortController().signal,
  };
}

function episodeSampling(request: EpisodeRequest): EpisodeSampling {
  return { temperature: request.temperature, topP: request.topP, topK: request.topK, seed: request.seed };
}

/** Scores a finished episode; an episode that failed, a simulated user or a reward that throws, is a failed rollout with reward 0. */
async function scoreRollout(
  kit: EpisodeKit,
  base: Pick<Rollout, 'task' | 'group' | 'sample' | 'policyVersion'>,
  env: EpisodeEnv,
  episode: EpisodeResult,
  user?: EpisodeUser,
): Promise<Rollout> {
  const { task } = base;
  try {
    user?.finish(episode.finishReason);
  } catch (error) {
    return failedRollout(base, {
      ...episode,
      error: `user simulator failed: ${errorMessage(error)}`,
      errorKind: 'user',
    });
  }
  if (episode.error !== undefined) return failedRollout(base, episode);
  try {
    const scoring = kit.reward({
      task,
      finalText: episode.finalText,
      messages: episode.messages,
      toolCalls: episode.toolCalls,
      finishReason: episode.finishReason,
      env,
    });
    const scored =
      kit.rewardTimeoutMs === undefined
        ? await scoring
        : await withTimeout(scoring, kit.rewardTimeoutMs, `timed out after ${kit.rewardTimeoutMs / 1000} s`);
    // The penalty shapes the reward the advantages see; success stays the task's own verdict.
    const penalty = kit.overlong ? overlongPenalty(kit.overlong, episode.stats.generatedTokens) : undefined;
    return {
      ...base,
      episode,
      reward: scored.score + (penalty ?? 0),
      parts: penalty === undefined ? scored.parts : { ...scored.parts, overlong: penalty },
      ...(scored.info ? { rewardInfo: scored.info } : {}),
      success: scored.score >= kit.successThreshold,
      failed: false,
    };
  } catch (error) {
    return failedRollout(base, episode, { error: `reward failed: ${errorMessage(error)}`, errorKind: 'reward' });
  }
}

/**
 * The scheduler's `onError` for episode slots: what escaped collectRollout (a bug in the harness)
 * becomes a failed rollout with the layer the error names, or `scheduler`, so the step and the eval
 * go on. Cancellation still ends them.
 */
export function rolloutOnThrow(policyVersion: number): (slot: EpisodeSlot<Task>, error: unknown) => Rollout {
  return ({ task, group, sample }, error) => {
    if (error instanceof CancelledError) throw error;
    const failure = describeFailure(error, 'scheduler');
    return failedRollout({ task, group, sample, policyVersion }, failedEpisode(failure.kind, failure.message));
  };
}

/** `work`, or a rejection with `message` once `ms` pass (the work itself is left to finish or hang). */
function withTimeout<T>(work: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/** A rollout with reward 0 that failed for `failure`: the episode's own error unless another is given (the reward's). */
function failedRollout(
  base: Pick<Rollout, 'task' | 'group' | 'sample' | 'policyVersion'>,
  episode: EpisodeResult,
  failure: Pick<Rollout, 'error' | 'errorKind'> = episode,
): Rollout {
  return {
    ...base,
    episode,
    reward: 0,
    parts: {},
    success: false,
    failed: true,
    ...(failure.error === undefined ? {} : { error: failure.error }),
    ...(failure.errorKind ? { errorKind: failure.errorKind } : {}),
  };
}

/**
 * The `sft` algorithm's "episode": the task's reference conversation (`task.data.reference`)
 * tokenised exactly as an RL episode would be, counted as a success with reward 1.
 * @throws InputError when the dataset gives the task no reference conversation.
 */
export function referenceRollout(kit: EpisodeKit, task: Task, group: number, policyVersion: number): Rollout {
  const reference = task.data.reference;
  if (!Array.isArray(reference)) {
    throw new InputError(`task ${task.id} has no reference conversation`, {
      hint: 'algorithm sft needs a dataset whose tasks carry data.reference (e.g. arith)',
    });
  }
  const env = {
    episodeId: `${group}-0`,
    task,
    state: new Map<string, unknown>(),
    signal: new AbortController().signal,
  };
  const tools = toChatTools(kit.tools.flatMap((make) => make(env)).map((t) => t.toolSpec));
  const systemPrompt = kit.systemPrompt(task);
  const messages: ChatMessage[] = [
    ...(systemPrompt ? [{ role: 'system' as const, content: systemPrompt }] : []),
    ...(reference as ChatMessage[]),
  ];
  const trajectory = referenceTrajectory(kit.tokenizer, messages, tools, kit.agent.chatTemplateKwargs ?? {});
  const generated = trajectory.mask().reduce((a, m) => a + m, 0);
  const toolCalls = messages.filter((m) => m.role === 'tool').length;
  const episode: EpisodeResult = {
    messages,
    trajectory,
    finalText: messages.at(-1)?.content ?? '',
    toolCalls: [],
    finishReason: 'reference',
    stats: {
      turns: trajectory.counters.turns,
      toolCalls,
      toolErrors: 0,
      userTurns: messages.filter((m) => m.role === 'user').length,
      toolErrorsByKind: {},
      toolCallsByTool: {},
      toolErrorsByTool: {},
      truncated: false,
      promptTokens: trajectory.length - generated,
      generatedTokens: generated,
      wallMs: 0,
      engineMs: 0,
    },
  };
  return { task, group, sample: 0, policyVersion, reward: 1, parts: {}, success: true, failed: false, episode };
}
