import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Task } from '../datasets/types.js';
import type { Engine } from '../engines/types.js';
import { CancelledError } from '../errors/index.js';
import type { ExternalAgentConfig } from '../recipe/schema.js';
import type { ToolCallRecord } from '../rewards/types.js';
import type { EpisodeResult } from '../rollout/episode.js';
import type { ExternalEpisodes } from '../rollout/external.js';
import type { ChatMessage } from '../tokens/chat-types.js';
import type { ModelTokenizer } from '../tokens/model-tokenizer.js';
import { toolCallParsers } from '../tokens/tool-calls/index.js';
import { TokenTrajectory } from '../tokens/trajectory.js';
import { callAgentServer, runAgentCommand, type AgentOutcome } from './agent-process.js';
import type { GatewayEpisode } from './gateway-episode.js';
import { REPORTED_REWARD_KEY } from './reported-reward.js';
import { startGateway, type Gateway } from './server.js';

/** What the run fixes for every external episode. */
export interface ExternalAgentsOptions {
  readonly config: ExternalAgentConfig;
  readonly recipeDir: string;
  readonly engine: Engine;
  readonly tokenizer: ModelTokenizer;
  readonly maxTurns: number;
  readonly maxNewTokens: number;
  readonly maxTotalTokens?: number;
  readonly maxToolCallsPerTurn?: number;
  readonly chatTemplateKwargs?: Readonly<Record<string, unknown>>;
  readonly toolCallFormat: string;
}

/** Runs the recipe's external agent once per episode behind the run's gateway. */
export interface ExternalAgents extends ExternalEpisodes {
  readonly gateway: Gateway;
}

/**
 * Starts the gateway for `agent.external`.
 * @throws Error when the recipe's tool-call format has no parser.
 */
export async function startExternalAgents(options: ExternalAgentsOptions): Promise<ExternalAgents> {
  const parser = toolCallParsers[options.toolCallFormat];
  if (!parser) throw new Error(`no tool-call parser for format '${options.toolCallFormat}'`);
  const gateway = await startGateway({ modelName: () => options.engine.model });
  let opened = 0;
  return {
    gateway,
    async run(request) {
      const started = performance.now();
      if (request.signal?.aborted) throw new CancelledError('episode cancelled before it started');
      const id = `${request.env.episodeId}-${++opened}`;
      const endpoint = gateway.open(id, {
        engine: options.engine,
        tokenizer: options.tokenizer,
        parser,
        policyVersion: request.policyVersion,
        maxTurns: options.maxTurns,
        maxNewTokens: options.maxNewTokens,
        ...(options.maxTotalTokens === undefined ? {} : { maxTotalTokens: options.maxTotalTokens }),
        ...(options.maxToolCallsPerTurn === undefined ? {} : { maxToolCallsPerTurn: options.maxToolCallsPerTurn }),
        sampling: request.sampling,
        ...(options.chatTemplateKwargs ? { chatTemplateKwargs: options.chatTemplateKwargs } : {}),
      });
      const { config } = options;
      const invocation = {
        task: taskJson(request.task, request.systemPrompt),
        baseUrl: endpoint.baseUrl,
        apiKey: endpoint.apiKey,
        episodeId: id,
        timeoutMs: Math.min(request.timeoutMs, (config.timeout_s ?? Infinity) * 1000),
        ...(request.signal ? { signal: request.signal } : {}),
      };
      let outcome: AgentOutcome;
      try {
        outcome =
          'url' in config
            ? await callAgentServer(config.url, invocation)
            : await runAgentCommand(
                { command: config.command, cwd: resolve(options.recipeDir, config.cwd ?? '.'), env: config.env },
                invocation,
              );
      } finally {
        endpoint.close();
      }
      if (request.signal?.aborted) throw new CancelledError('episode cancelled');
      const reported =
        typeof outcome.result?.reward === 'number' ? outcome.result.reward : endpoint.episode.reportedReward;
      if (reported !== undefined) request.env.state.set(REPORTED_REWARD_KEY, reported);
      return externalEpisodeResult(endpoint.episode, outcome, request.systemPrompt, performance.now() - started);
    },
    close: () => gateway.stop(),
  };
}

/** What the agent gets on stdin (or as `task` in the POST): the task and the recipe's system prompt. */
function taskJson(task: Task, systemPrompt: string | undefined): Record<string, unknown> {
  return {
    id: task.id,
    prompt: task.prompt,
    ...(task.answer === undefined ? {} : { answer: task.answer }),
    data: task.data,
    ...(systemPrompt === undefined ? {} : { system_prompt: systemPrompt }),
  };
}

/** The episode as the reward, the trainer and the trajectory files see it. */
export function externalEpisodeResult(
  episode: GatewayEpisode,
  outcome: AgentOutcome,
  systemPrompt: string | undefined,
  wallMs: number,
): EpisodeResult {
  const segments = episode.segments;
  const trajectory = segments.at(-1)?.trajectory ?? new TokenTrajectory();
  const messages = episode.conversation;
  const error = outcome.error ?? (episode.modelCalls === 0 ? 'the agent never called the model' : undefined);
  const answer = outcome.result?.answer;
  // Trimmed as the built-in agent's final text is, so rewards read both alike (the API returned it untrimmed).
  const lastReply = (messages.filter((m) => m.role === 'assistant').at(-1)?.content ?? '').trim();
  const toolCalls = toolCallRecords(messages);
  // Every figure over every segment: an eval's tool error rate divides errors by calls of the same turns.
  const counters = segments.reduce(
    (sum, s) => ({
      turns: sum.turns + s.trajectory.counters.turns,
      toolCalls: sum.toolCalls + s.trajectory.counters.toolCalls,
      toolErrors: sum.toolErrors + s.trajectory.counters.toolErrors,
      truncations: sum.truncations + s.trajectory.counters.truncations,
    }),
    { turns: 0, toolCalls: 0, toolErrors: 0, truncations: 0 },
  );
  const finishReason =
    error !== undefined
      ? outcome.timedOut
        ? 'timeout'
        : 'error'
      : episode.lastFinishReason === 'length'
        ? 'truncated'
        : 'endTurn';
  return {
    messages:
      messages.length > 0 && messages[0]!.role !== 'system' && systemPrompt !== undefined
        ? [{ role: 'system', content: systemPrompt }, ...messages]
        : [...messages],
    trajectory,
    finalText: typeof answer === 'string' ? answer : typeof answer === 'number' ? String(answer) : lastReply,
    toolCalls,
    finishReason,
    stats: {
      turns: counters.turns,
      toolCalls: counters.toolCalls,
      toolErrors: counters.toolErrors,
      userTurns: messages.filter((m) => m.role === 'user').length,
      toolErrorsByKind: { ...episode.toolErrorsByKind },
      toolCallsByTool: { ...episode.toolCallsByTool },
      toolErrorsByTool: {},
      truncated: finishReason === 'truncated',
      promptTokens: episode.promptTokens,
      generatedTokens: episode.generatedTokens,
      wallMs,
      engineMs: episode.engineMs,
      historyRewrites: segments.length > 0 ? segments.length - 1 : 0,
    },
    ...(error === undefined ? {} : failure(error, outcome, episode)),
    ...(segments.length > 1
      ? {
          priorSegments: segments
            .slice(0, -1)
            .map((s, i) => ({ trajectory: s.trajectory, endedBecause: segments[i + 1]!.reason ?? '' })),
        }
      : {}),
    ...(outcome.log ? { agentLog: outcome.log } : {}),
    chatTools: episode.tools,
  };
}

/** Tool calls the agent made, paired with the results it sent back (the agent ran the tools itself). */
function toolCallRecords(messages: readonly ChatMessage[]): ToolCallRecord[] {
  const results = new Map(
    messages.filter((m) => m.role === 'tool' && m.tool_call_id).map((m) => [m.tool_call_id!, m.content]),
  );
  return messages.flatMap((m) =>
    (m.tool_calls ?? []).map((call) => ({
      name: call.function.name,
      input: call.function.arguments,
      status: 'success' as const,
      output: call.id ? (results.get(call.id) ?? '') : '',
    })),
  );
}

/**
 * Why a failed external episode failed: its timeout, the engine when a request of it met an engine failure
 * (the agent could not go on without the model), else the agent itself.
 */
function failure(
  error: string,
  outcome: AgentOutcome,
  episode: GatewayEpisode,
): Pick<EpisodeResult, 'error' | 'errorKind'> {
  if (outcome.timedOut) return { error, errorKind: 'timeout' };
  if (episode.engineFailure !== undefined)
    return { error: `${episode.engineFailure} (then the agent: ${error})`, errorKind: 'engine' };
  return { error, errorKind: 'agent' };
}
