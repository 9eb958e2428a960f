import type { Tool } from '@strands-agents/sdk';
import type { Task } from '../datasets/types.js';
import type { Engine } from '../engines/types.js';
import type { ComposedReward } from '../rewards/compose.js';
import type { ExternalAgents } from '../gateway/external-episode.js';
import type { EpisodeEnv, EpisodeTools } from '../tools/types.js';
import { toChatTools } from '../agent/index.js';
import { InputError } from '../errors/index.js';
import type { ChatMessage, ModelTokenizer } from '../tokens/index.js';
import { runEpisode, type AgentSpec, type EpisodeResult } from './episode.js';
import { referenceTrajectory } from './reference.js';
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
  readonly timeoutMs: number;
  /** The simulated user of an episode (the recipe's `user` section); absent for single-turn tasks. */
  readonly user?: (task: Task, env: EpisodeEnv) => EpisodeUser | undefined;
  /** The recipe's `agent.external`: its episodes run through the gateway instead of the built-in agent. */
  readonly external?: ExternalAgents;
  /** Stops what the tools started for the run (MCP servers); call once when the run ends. */
  readonly close?: () => Promise<void>;
}

/** One finished and scored episode: what a trajectory line records. */
export interface Rollout {
  readonly task: Task;
  readonly group: number;
  readonly sample: number;
  readonly policyVersion: number;
  readonly reward: number;
  readonly parts: Readonly<Record<string, number>>;
  readonly rewardInfo?: Readonly<Record<string, unknown>>;
  readonly success: boolean;
  /** The episode failed (engine error, timeout, reward crash): recorded with its reason. */
  readonly failed: boolean;
  readonly error?: string;
  readonly episode: EpisodeResult;
}

export interface EpisodeRequest {
  readonly task: Task;
  readonly group: number;
  readonly sample: number;
  readonly seed: number;
  readonly temperature: number;
  readonly topP: number;
  readonly topK: number;
  readonly policyVersion: number;
  readonly signal?: AbortSignal;
}

/**
 * Run one episode and score it. Never throws for episode-level failures: an engine error, a
 * timeout or a reward that throws becomes a failed rollout with its reason and reward 0.
 */
export async function collectRollout(kit: EpisodeKit, request: EpisodeRequest): Promise<Rollout> {
  const { task } = request;
  const env = { episodeId: `${request.group}-${request.sample}`, task, state: new Map<string, unknown>(), signal: request.signal ?? new AbortController().signal };
  const systemPrompt = kit.systemPrompt(task);
  const sampling = { temperature: request.temperature, topP: request.topP, topK: request.topK, seed: request.seed };
  if (kit.external) {
    const episode = await kit.external.run({ task, env, ...(systemPrompt === undefined ? {} : { systemPrompt }), policyVersion: request.policyVersion, sampling, timeoutMs: kit.timeoutMs, ...(request.signal ? { signal: request.signal } : {}) });
    return scoreRollout(kit, request, env, episode);
  }
  const tools: Tool[] = kit.tools.flatMap((make) => make(env));
  const user = kit.user?.(task, env);
  const episode = await runEpisode({
    task,
    spec: {
      ...kit.agent,
      ...(systemPrompt === undefined ? {} : { systemPrompt }),
      ...(user ? { maxSteps: user.maxSteps, maxToolErrors: user.maxToolErrors } : {}),
      tools,
      sampling,
    },
    engine: kit.engine,
    tokenizer: kit.tokenizer,
    policyVersion: request.policyVersion,
    timeoutMs: kit.timeoutMs,
    env,
    ...(request.signal ? { signal: request.signal } : {}),
    ...(user ? { user: user.respond, ...(user.opening === undefined ? {} : { opening: user.opening }) } : {}),
  });
  user?.finish(episode.finishReason);
  return scoreRollout(kit, request, env, episode);
}

/** Scores a finished episode; an episode that failed, or a reward that throws, is a failed rollout with reward 0. */
async function scoreRollout(kit: EpisodeKit, request: EpisodeRequest, env: EpisodeEnv, episode: EpisodeResult): Promise<Rollout> {
  const { task } = request;
  const base = { task, group: request.group, sample: request.sample, policyVersion: request.policyVersion, episode };
  if (episode.error !== undefined) {
    return { ...base, reward: 0, parts: {}, success: false, failed: true, error: episode.error };
  }
  try {
    const scored = await kit.reward({
      task,
      finalText: episode.finalText,
      messages: episode.messages,
      toolCalls: episode.toolCalls,
      finishReason: episode.finishReason,
      env,
    });
    return {
      ...base,
      reward: scored.score,
      parts: scored.parts,
      ...(scored.info ? { rewardInfo: scored.info } : {}),
      success: scored.score >= kit.successThreshold,
      failed: false,
    };
  } catch (error) {
    return { ...base, reward: 0, parts: {}, success: false, failed: true, error: `reward failed: ${error instanceof Error ? error.message : String(error)}` };
  }
}

/**
 * The `sft` algorithm's "episode": the task's reference conversation (`task.data.reference`)
 * tokenised exactly as an RL episode would be, counted as a success with reward 1.
 * @throws InputError when the dataset gives the task no reference conversation.
 */
export function referenceRollout(kit: EpisodeKit, task: Task, group: number, policyVersion: number): Rollout {
  const reference = task.data.reference;
  if (!Array.isArray(reference)) {
    throw new InputError(`task ${task.id} has no reference conversation`, { hint: 'algorithm sft needs a dataset whose tasks carry data.reference (e.g. arith)' });
  }
  const env = { episodeId: `${group}-0`, task, state: new Map<string, unknown>(), signal: new AbortController().signal };
  const tools = toChatTools(kit.tools.flatMap((make) => make(env)).map((t) => t.toolSpec));
  const systemPrompt = kit.systemPrompt(task);
  const messages: ChatMessage[] = [...(systemPrompt ? [{ role: 'system' as const, content: systemPrompt }] : []), ...(reference as ChatMessage[])];
  const trajectory = referenceTrajectory(kit.tokenizer, messages, tools, kit.agent.chatTemplateKwargs ?? {});
  const generated = trajectory.mask().reduce((a, m) => a + m, 0);
  const toolCalls = messages.filter((m) => m.role === 'tool').length;
  const episode: EpisodeResult = {
    messages,
    trajectory,
    finalText: messages.at(-1)?.content ?? '',
    toolCalls: [],
    finishReason: 'reference',
    stats: { turns: trajectory.counters.turns, toolCalls, toolErrors: 0, toolErrorsByKind: {}, toolCallsByTool: {}, toolErrorsByTool: {}, truncated: false, promptTokens: trajectory.length - generated, generatedTokens: generated, wallMs: 0, engineMs: 0 },
  };
  return { task, group, sample: 0, policyVersion, reward: 1, parts: {}, success: true, failed: false, episode };
}
