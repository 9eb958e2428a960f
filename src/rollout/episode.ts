import { performance } from 'node:perf_hooks';
import { AfterToolsEvent, Message, TextBlock, type Agent, type Tool } from '@strands-agents/sdk';
import type { PolicyClock } from '../agent/policy-clock.js';
import { createTitoAgent, type TitoAgent } from '../agent/create-agent.js';
import { blame, blameAsync, describeFailure, EpisodeFailure, type EpisodeErrorKind } from '../agent/episode-failure.js';
import { EpisodeLedger } from '../agent/episode-ledger.js';
import type { GenerationSettings } from '../agent/generation-settings.js';
import type { Task } from '../datasets/types.js';
import type { Engine } from '../engines/types.js';
import { CancelledError } from '../errors/index.js';
import type { ToolCallRecord } from '../rewards/types.js';
import type { EpisodeEnv } from '../tools/types.js';
import type { ChatMessage, ChatTool } from '../tokens/chat-types.js';
import { toChatMessages } from '../agent/chat-messages.js';
import { throughLastReply } from '../agent/tito-model.js';
import type { ModelTokenizer } from '../tokens/model-tokenizer.js';
import { toolCallParsers } from '../tokens/tool-calls/index.js';
import type { ReasoningHistory } from '../tokens/reasoning-history.js';
import type { TokenTrajectory } from '../tokens/trajectory.js';
import type { ContextPolicy } from '../agent/long-episode.js';

/** How the agent of one episode behaves. */
export interface AgentSpec extends GenerationSettings {
  readonly systemPrompt?: string;
  /** Strands tools for this episode (built with its EpisodeEnv). */
  readonly tools: readonly Tool[];
  /** Most model calls in the episode, user turns included. */
  readonly maxTurns: number;
  /** A format of `toolCallParsers` (`agent.tool_call_format` with `auto` resolved). */
  readonly toolCallFormat: string;
  /** Most conversation steps (model messages, tool results and user messages, each one step); reaching it ends the episode with `maxSteps`. */
  readonly maxSteps?: number;
  /** Most error tool results; reaching it ends the episode with `maxToolErrors`. */
  readonly maxToolErrors?: number;
  /** `agent.reasoning_history` resolved against the template (default keep). */
  readonly reasoningHistory?: ReasoningHistory;
  /** `agent.context`: what happens once a prompt passes its budget. */
  readonly context?: ContextPolicy;
}

export interface EpisodeStats {
  readonly turns: number;
  readonly toolCalls: number;
  readonly toolErrors: number;
  /** User messages in the conversation, the first prompt included (more than 1 only with a simulated user). */
  readonly userTurns: number;
  readonly toolErrorsByKind: Readonly<Record<string, number>>;
  /** Calls of each of the agent's tools (a call naming no such tool counts under its kind only). */
  readonly toolCallsByTool: Readonly<Record<string, number>>;
  /** Error results of each of the agent's tools: it threw, hung, returned nothing usable, or its call was rejected. */
  readonly toolErrorsByTool: Readonly<Record<string, number>>;
  readonly truncated: boolean;
  /** Environment tokens (first prompt, tool results, user turns). */
  readonly promptTokens: number;
  readonly generatedTokens: number;
  readonly wallMs: number;
  readonly engineMs: number;
  /** Gateway episodes: times the agent rewrote its history, each starting a new trajectory segment. */
  readonly historyRewrites?: number;
  /** Built-in agent with agent.context: prompt tokens the sliding window or summary left out of new segments. */
  readonly contextDroppedTokens?: number;
}

/** A finished episode: the conversation, its exact tokens, and what happened. */
export interface EpisodeResult {
  /** Plain JSON `{role, content}`: `{role: 'system', content: [{text}]}` when there is a system prompt, then Strands MessageData. */
  readonly messages: unknown[];
  readonly trajectory: TokenTrajectory;
  /** Text of the last assistant message, without reasoning and tool-call markup. */
  readonly finalText: string;
  readonly toolCalls: ToolCallRecord[];
  /** endTurn | truncated | limitTurns | maxTotalTokens | maxSteps | maxToolErrors | userStop | engineAbort | timeout | error. */
  readonly finishReason: string;
  readonly stats: EpisodeStats;
  /** Set when the episode failed (anything it threw, the timeout); such episodes are not thrown. */
  readonly error?: string;
  /** The layer that failed, with `error`. */
  readonly errorKind?: EpisodeErrorKind;
  /**
   * Episodes whose history was rewritten (a gateway agent's own rewrite, the built-in agent's
   * reasoning strip or context management): the trajectory segments before `trajectory`, in order, each
   * with why the segment after it starts from a fresh render. Every segment is trained.
   */
  readonly priorSegments?: readonly {
    readonly trajectory: TokenTrajectory;
    readonly endedBecause: string;
    /** The built-in agent: the conversation the segment rendered, through its last reply. */
    readonly messages?: readonly ChatMessage[];
  }[];
  /**
   * The built-in agent's split episodes: the conversation the last segment rendered, through its last
   * reply (after a window or summary not the episode's `messages`); each segment's drift audit renders its own.
   */
  readonly segmentMessages?: readonly ChatMessage[];
  /** External agents: the end of their stderr (or of an agent server's error body). */
  readonly agentLog?: string;
  /** External agents: the tools their requests carried, as the template rendered them (for the drift audit). */
  readonly chatTools?: readonly ChatTool[];
}

export interface RunEpisodeOptions {
  readonly task: Task;
  readonly spec: AgentSpec;
  readonly engine: Engine;
  readonly tokenizer: ModelTokenizer;
  /** The policy version stamped on each model turn; a function is read at each engine request. */
  readonly policyVersion: PolicyClock;
  /** Wall-clock limit of the whole episode; the in-flight engine request and tools are aborted. */
  readonly timeoutMs: number;
  /** Cancels the episode: runEpisode then throws CancelledError. */
  readonly signal?: AbortSignal;
  /** Passed to tools as `invocationState.env`. */
  readonly env?: EpisodeEnv;
  /**
   * Multi-turn user (a simulator or a script): called when the agent ends its turn without tool calls;
   * returns the next user message, or null to end. User turns enter the trajectory as environment tokens.
   * When `task.prompt` is empty it also writes the first user message (after the opening, if any).
   */
  readonly user?: (conversation: readonly unknown[]) => Promise<string | null>;
  /**
   * A fixed first agent line the conversation opens with, before the first user message (tau2's
   * greeting). It is rendered as an assistant turn inside the first prompt, so its tokens are
   * environment tokens (mask 0): the model is never trained on a line it did not write, and the
   * trajectory stays append-only because the line is there from the first render on.
   */
  readonly opening?: string;
}

class EpisodeTimeout extends Error {}

/**
 * Runs one agent episode on the engine and returns its messages, exact token trajectory and stats.
 * Training and evaluation both call it. Whatever the episode throws (engine, chat template, parser,
 * SDK, user) and the timeout are results (`error` and `errorKind` set), not exceptions.
 * @throws CancelledError when `signal` aborts.
 */
export async function runEpisode(options: RunEpisodeOptions): Promise<EpisodeResult> {
  const { spec } = options;
  const started = performance.now();
  if (options.signal?.aborted) throw new CancelledError('episode cancelled before it started');
  let built: TitoAgent;
  try {
    built = buildAgent(options);
  } catch (caught) {
    const failure = describeFailure(caught, 'sdk');
    return failedEpisode(failure.kind, failure.message, performance.now() - started);
  }
  const { agent, ledger, transcript } = built;
  if (options.opening !== undefined)
    agent.messages.push(new Message({ role: 'assistant', content: [new TextBlock(options.opening)] }));
  const seeded = agent.messages.length;

  const timeout = new AbortController();
  const timer = setTimeout(
    () => timeout.abort(new EpisodeTimeout(`episode timed out after ${options.timeoutMs} ms`)),
    options.timeoutMs,
  );
  const cancelSignal = options.signal ? AbortSignal.any([timeout.signal, options.signal]) : timeout.signal;
  let finishReason = 'endTurn';
  let failure: { kind: EpisodeErrorKind; message: string } | undefined;
  const users = { turns: 0 };
  try {
    finishReason = await converse(agent, ledger, transcript, options, cancelSignal, seeded, users);
  } catch (caught) {
    if (options.signal?.aborted) throw new CancelledError('episode cancelled', { cause: caught });
    finishReason = timeout.signal.aborted ? 'timeout' : 'error';
    failure = timeout.signal.aborted
      ? { kind: 'timeout', message: (timeout.signal.reason as Error).message }
      : describeFailure(caught, 'sdk');
  } finally {
    clearTimeout(timer);
  }
  return result(transcript(), ledger, spec, seeded, finishReason, failure, performance.now() - started, users.turns);
}

function buildAgent(options: RunEpisodeOptions): TitoAgent {
  const { spec } = options;
  const parser = toolCallParsers[spec.toolCallFormat];
  if (!parser) throw new EpisodeFailure('parser', new Error(`no tool-call parser for format '${spec.toolCallFormat}'`));
  return blame('sdk', () =>
    createTitoAgent({
      engine: options.engine,
      tokenizer: options.tokenizer,
      parser,
      policyVersion: options.policyVersion,
      maxNewTokens: spec.maxNewTokens,
      ...(spec.maxTotalTokens === undefined ? {} : { maxTotalTokens: spec.maxTotalTokens }),
      ...(spec.maxToolCallsPerTurn === undefined ? {} : { maxToolCallsPerTurn: spec.maxToolCallsPerTurn }),
      sampling: spec.sampling,
      ...(spec.chatTemplateKwargs ? { chatTemplateKwargs: spec.chatTemplateKwargs } : {}),
      ...(spec.reasoningHistory ? { reasoningHistory: spec.reasoningHistory } : {}),
      ...(spec.context ? { context: spec.context } : {}),
      tools: spec.tools,
      ...(spec.systemPrompt ? { systemPrompt: spec.systemPrompt } : {}),
    }),
  );
}

/** An episode that failed before its agent could run: no messages, no tokens. */
export function failedEpisode(kind: EpisodeErrorKind, message: string, wallMs = 0): EpisodeResult {
  const ledger = new EpisodeLedger();
  const { trajectory } = ledger;
  return {
    messages: [],
    trajectory,
    finalText: '',
    toolCalls: [],
    finishReason: 'error',
    stats: {
      turns: 0,
      toolCalls: 0,
      toolErrors: 0,
      userTurns: 0,
      toolErrorsByKind: {},
      toolCallsByTool: {},
      toolErrorsByTool: {},
      truncated: false,
      promptTokens: 0,
      generatedTokens: 0,
      wallMs,
      engineMs: 0,
    },
    error: message,
    errorKind: kind,
  };
}

/** The agent loop plus user turns; returns the finish reason. */
async function converse(
  agent: Agent,
  ledger: EpisodeLedger,
  transcript: () => Message[],
  options: RunEpisodeOptions,
  signal: AbortSignal,
  seeded: number,
  users: { turns: number },
): Promise<string> {
  const { spec } = options;
  const limitReached = (): string | undefined => {
    const { turns, toolCalls, toolErrors } = ledger.trajectory.counters;
    if (spec.maxToolErrors !== undefined && toolErrors >= spec.maxToolErrors) return 'maxToolErrors';
    if (spec.maxSteps !== undefined && turns + toolCalls + users.turns >= spec.maxSteps) return 'maxSteps';
    return undefined;
  };
  // Tool batches run inside one agent invocation, so the limits are also checked after each batch.
  agent.addHook(AfterToolsEvent, (event) => {
    const reason = limitReached();
    if (reason === undefined) return;
    ledger.stopReason = reason;
    event.endTurn = true;
  });
  const conversation = (): unknown[] => plainMessages(transcript(), ledger, spec.systemPrompt, seeded);
  const askUser = (): Promise<string | null> =>
    untilAborted(
      blameAsync('user', () => options.user!(conversation())),
      signal,
    );
  let prompt: string | null = options.task.prompt === '' && options.user ? await askUser() : options.task.prompt;
  for (;;) {
    if (prompt === null) return 'userStop';
    users.turns++;
    const limited = limitReached();
    if (limited) return limited;
    const turnsLeft = spec.maxTurns - ledger.trajectory.counters.turns;
    if (turnsLeft <= 0) return 'limitTurns';
    const invocation = agent.invoke(prompt, {
      limits: { turns: turnsLeft },
      cancelSignal: signal,
      ...(options.env ? { invocationState: { env: options.env } } : {}),
    });
    const outcome = await untilAborted(invocation, signal);
    if (outcome.stopReason === 'cancelled') throw signal.reason ?? new Error('agent cancelled');
    const reason = ledger.stopReason ?? outcome.stopReason;
    if (reason !== 'endTurn' || !options.user) return reason;
    const limitedBeforeUser = limitReached();
    if (limitedBeforeUser) return limitedBeforeUser;
    prompt = await askUser();
  }
}

/** Settles with `work`, or rejects with the signal's reason as soon as it aborts (a tool may ignore it). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function result(
  transcript: readonly Message[],
  ledger: EpisodeLedger,
  spec: AgentSpec,
  seeded: number,
  finishReason: string,
  failure: { kind: EpisodeErrorKind; message: string } | undefined,
  wallMs: number,
  userTurns: number,
): EpisodeResult {
  const trajectory = ledger.trajectory;
  const messages = plainMessages(transcript, ledger, spec.systemPrompt, seeded);
  const last = [...modelMessages(transcript, ledger, seeded)].at(-1);
  const finalText = last ? last.content.map((b) => (b.type === 'textBlock' ? b.text : '')).join('') : '';
  return {
    messages,
    trajectory,
    finalText,
    toolCalls: ledger.toolCalls,
    finishReason,
    stats: {
      turns: trajectory.counters.turns,
      toolCalls: trajectory.counters.toolCalls,
      toolErrors: trajectory.counters.toolErrors,
      userTurns,
      toolErrorsByKind: { ...ledger.toolErrorsByKind },
      toolCallsByTool: { ...ledger.toolCallsByTool },
      toolErrorsByTool: { ...ledger.toolErrorsByTool },
      truncated: finishReason === 'truncated',
      promptTokens: ledger.promptTokens,
      generatedTokens: ledger.generatedTokens,
      wallMs,
      engineMs: ledger.engineMs,
      ...(spec.context && spec.context.strategy !== 'none'
        ? { contextDroppedTokens: ledger.contextDroppedTokens }
        : {}),
    },
    ...(failure === undefined ? {} : { error: failure.message, errorKind: failure.kind }),
    ...(ledger.priorSegments.length > 0
      ? {
          priorSegments: [...ledger.priorSegments],
          segmentMessages: throughLastReply([
            ...ledger.conversation,
            ...(ledger.replyPending && last ? toChatMessages(last) : []),
          ]),
        }
      : {}),
  };
}

/**
 * The conversation as plain JSON. The first `seeded` messages (the opening) are kept; later assistant
 * messages the model did not generate (the SDK's "Cancelled by user", the empty message that ends a
 * maxTotalTokens episode, the one a limit hook ends a turn with) are left out.
 */
function plainMessages(
  transcript: readonly Message[],
  ledger: EpisodeLedger,
  systemPrompt: string | undefined,
  seeded: number,
): unknown[] {
  const fromModel = modelMessages(transcript, ledger, seeded);
  const out: unknown[] = systemPrompt ? [{ role: 'system', content: [{ text: systemPrompt }] }] : [];
  for (const [i, message] of transcript.entries()) {
    if (i >= seeded && message.role === 'assistant' && !fromModel.has(message)) continue;
    const { role, content } = message.toJSON();
    out.push({ role, content });
  }
  return out;
}

/** The first `turns` assistant messages after the `seeded` opening are the model's (one per engine call), in order. */
function modelMessages(transcript: readonly Message[], ledger: EpisodeLedger, seeded: number): Set<Message> {
  const assistant = transcript.slice(seeded).filter((m) => m.role === 'assistant');
  return new Set(assistant.slice(0, ledger.trajectory.counters.turns - ledger.summaryTurns));
}
