import { ProviderError } from '../errors/index.js';
import { EpisodeFailure } from '../agent/episode-failure.js';
import { callProblems } from '../agent/episode-ledger.js';
import type { GenerationSettings } from '../agent/generation-settings.js';
import type { PolicyClock } from '../agent/policy-clock.js';
import { type TitoTurnContext, type TitoTurnResult, titoTurn } from '../agent/tito-turn.js';
import type { Engine } from '../engines/types.js';
import type { ChatMessage, ChatTool } from '../tokens/chat-types.js';
import { incrementalRenderer } from '../tokens/incremental-render.js';
import type { ModelTokenizer } from '../tokens/model-tokenizer.js';
import type { ToolCallParser } from '../tokens/tool-calls/types.js';
import { TokenTrajectory } from '../tokens/trajectory.js';
import { GatewayError } from './errors.js';
import { historyBreak } from './history-match.js';
import { type RejectedCall, withRejectedResults } from './rejected-calls.js';
import type { ParsedCompletionRequest } from './openai-request.js';

/** What every episode of a run shares: the engine, the tokenizer and the recipe's limits and sampling. */
export interface GatewayEpisodeOptions extends GenerationSettings {
  readonly engine: Engine;
  readonly tokenizer: ModelTokenizer;
  readonly parser: ToolCallParser;
  /** The sampling policy version; a function (the served version) is read at each model request. */
  readonly policyVersion: PolicyClock;
  /** Most model calls in the episode (agent.max_turns). */
  readonly maxTurns: number;
  /**
   * Makes the reply ids (`call_<prefix>_<episode>_<turn>_<i>`) unique to the run: the gateway gives each
   * run a random one, so clients that key on ids across runs never see one twice.
   */
  readonly idPrefix?: string;
  // GenerationSettings: a request's max_tokens may only lower maxNewTokens; its temperature and top_p
  // replace the recipe's sampling for that call; maxTotalTokens caps each trajectory segment.
}

/** One trajectory segment: the first starts with the episode, each later one where the agent rewrote history. */
export interface GatewaySegment {
  readonly trajectory: TokenTrajectory;
  /** Why this segment starts from a fresh render; null for the first. */
  readonly reason: string | null;
}

/** One reply, in the pieces the response writers need. */
export interface GatewayReply {
  readonly turn: number;
  /** The content as the model generated it, untrimmed; with tool calls, the text before the first one. */
  readonly text: string;
  readonly reasoning: string;
  readonly toolCalls: readonly { readonly id: string; readonly name: string; readonly arguments: string }[];
  readonly finishReason: 'stop' | 'length' | 'tool_calls';
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** The reply's tokens as text, one per generated token, with their logprobs and alternatives (for `logprobs: true`). */
  readonly tokens: readonly ReplyToken[];
}

/** One generated token as OpenAI's `logprobs.content` lists it; `top` is empty unless `top_logprobs` asked. */
export interface ReplyToken {
  readonly token: string;
  readonly logprob: number;
  readonly top: readonly { readonly token: string; readonly logprob: number }[];
}

type GeneratedTurn = Extract<TitoTurnResult, { status: 'generated' }>;

/**
 * The gateway side of one external episode: keeps its exact token trajectory across requests. A request
 * that extends the recorded conversation (previous messages + the reply given) appends only the new
 * messages' tokens, rendered incrementally; the model's own tokens are never re-rendered. Any other
 * request starts a new segment from a fresh render, with the reason recorded. Requests of one episode
 * are served one at a time, in arrival order.
 */
export class GatewayEpisode {
  readonly segments: GatewaySegment[] = [];
  /** Malformed tool calls returned as text, by kind. */
  readonly toolErrorsByKind: Record<string, number> = {};
  /** Calls returned to the agent, by tool, over every segment (calls of tools the request did not offer are counted by kind only). */
  readonly toolCallsByTool: Record<string, number> = {};
  engineMs = 0;
  promptTokens = 0;
  generatedTokens = 0;
  /** Set by a reward report (POST /episodes/<id>/reward). */
  reportedReward: number | undefined;
  /** The first engine failure a request of this episode met (its first line): the agent failing after it failed there. */
  engineFailure: string | undefined;
  private readonly context: TitoTurnContext;
  /** The agent's view: the latest request's messages and the reply to it (what the next request must extend). */
  private recorded: ChatMessage[] = [];
  /** The model's view of the same conversation: with the error results of rejected calls (see withRejectedResults). */
  private shown: ChatMessage[] = [];
  /** Malformed calls of the latest reply, answered with errors when the conversation continues. */
  private rejected: RejectedCall[] = [];
  private recordedTools: ChatTool[] = [];
  private turns = 0;
  private lastFinish: string | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    readonly id: string,
    private readonly options: GatewayEpisodeOptions,
  ) {
    const { engine, tokenizer, parser, policyVersion } = options;
    const renderer = incrementalRenderer(tokenizer, options.chatTemplateKwargs ?? {});
    this.context = { engine, tokenizer, renderer, parser, policyVersion, tally: this };
  }

  /** Model calls answered so far. */
  get modelCalls(): number {
    return this.turns;
  }

  /** The conversation the model saw, up to the latest reply (the error results of rejected calls included). */
  get conversation(): readonly ChatMessage[] {
    return this.shown;
  }

  get tools(): readonly ChatTool[] {
    return this.recordedTools;
  }

  /** Engine finish reason of the latest reply (stop, length, abort). */
  get lastFinishReason(): string | undefined {
    return this.lastFinish;
  }

  /**
   * Renders the request, asks the engine, records the tokens and returns the reply. `onGenerating` is
   * called with the reply's turn once the request is accepted, just before the engine is asked (a
   * streamed reply sends its first chunk then).
   * @throws GatewayError 400 past max_turns or the context budget; ProviderError from the engine.
   */
  complete(
    request: ParsedCompletionRequest,
    signal?: AbortSignal,
    onGenerating?: (turn: number) => void,
  ): Promise<GatewayReply> {
    const next = this.queue.then(() => this.completeNow(request, signal, onGenerating));
    this.queue = next.catch((error: unknown) => {
      if (error instanceof ProviderError) this.engineFailure ??= error.message.split('\n')[0];
    });
    return next;
  }

  private async completeNow(
    request: ParsedCompletionRequest,
    signal: AbortSignal | undefined,
    onGenerating: ((turn: number) => void) | undefined,
  ): Promise<GatewayReply> {
    const { engine, maxTurns, maxNewTokens, sampling } = this.options;
    if (this.turns >= maxTurns)
      throw new GatewayError(
        400,
        'max_turns_exceeded',
        `episode ${this.id} has used all ${maxTurns} model calls (agent.max_turns)`,
      );
    const current = this.segments.at(-1);
    const reason = current ? historyBreak(this.recorded, this.recordedTools, request.messages, request.tools) : null;
    const fresh = !current || reason !== undefined;
    const trajectory = fresh ? new TokenTrajectory() : current.trajectory;
    const added = fresh
      ? request.messages
      : withRejectedResults(request.messages.slice(this.recorded.length), this.rejected);
    const turn = this.turns;
    const budget = this.options.maxTotalTokens ?? Infinity;
    const result = await gatewayFailures(() =>
      titoTurn(this.context, {
        trajectory,
        fresh,
        messages: added,
        ...(fresh ? {} : { reply: this.shown.at(-1) }),
        tools: request.tools,
        turn,
        sampling: {
          temperature: request.temperature ?? sampling.temperature,
          topP: request.topP ?? sampling.topP,
          topK: sampling.topK,
          // The episode's seed on every call, as the built-in agent sends it, so both sample alike.
          ...(request.seed !== undefined
            ? { seed: request.seed }
            : sampling.seed !== undefined
              ? { seed: sampling.seed }
              : {}),
          ...(request.topLogprobs > 0 ? { topLogprobs: request.topLogprobs } : {}),
        },
        // A request's max_tokens may only lower the recipe's cap.
        maxNewTokens: Math.min(request.maxTokens ?? maxNewTokens, maxNewTokens),
        maxTotalTokens: budget,
        stop: request.stop,
        ...(signal ? { signal } : {}),
        ...(onGenerating ? { onGenerating: () => onGenerating(turn) } : {}),
        accept: (generation) => {
          if (request.topLogprobs > 0 && generation.topLogprobs?.length !== generation.tokenIds.length)
            throw new GatewayError(
              400,
              'top_logprobs_unsupported',
              `the ${engine.kind} engine did not return top logprobs; send top_logprobs: 0`,
              'top_logprobs',
            );
        },
      }),
    );
    if (result.status === 'overBudget') {
      throw new GatewayError(
        400,
        'context_length_exceeded',
        `the conversation is ${result.promptLength} tokens, past the episode's budget of ${budget} (agent.max_total_tokens)`,
        'messages',
      );
    }
    // The request's tokens joined the trajectory only with the answer to them: a failed call leaves none.
    if (fresh) this.segments.push({ trajectory, reason: reason ?? null });
    this.turns++;
    this.lastFinish = result.finishReason;

    const reply = this.reply(turn, result, request, trajectory);
    const message = replyMessage(reply);
    this.recorded = [...request.messages, message];
    this.shown = [...(fresh ? [] : this.shown), ...added, message];
    this.recordedTools = request.tools;
    return reply;
  }

  private reply(
    turn: number,
    result: GeneratedTurn,
    request: ParsedCompletionRequest,
    trajectory: TokenTrajectory,
  ): GatewayReply {
    const { tokenizer, idPrefix } = this.options;
    const { parsed, text: raw, ids, finishReason: finish } = result;
    // Calls are parsed only under tool_choice auto; then every call the model wrote counts, as in the built-in agent.
    const calls = request.parseToolCalls ? parsed.calls : [];
    trajectory.counters.toolCalls += calls.length;
    // As in the built-in agent, a malformed call and one past agent.max_tool_calls_per_turn (the agent runs
    // whatever it is given, so those are never given) are answered with an error and counted.
    const problems = callProblems(calls, this.options.maxToolCallsPerTurn ?? Number.POSITIVE_INFINITY);
    for (const problem of problems) {
      if (!problem) continue;
      this.toolErrorsByKind[problem.kind] = (this.toolErrorsByKind[problem.kind] ?? 0) + 1;
      trajectory.counters.toolErrors++;
    }
    // parallel_tool_calls: false returns the first well-formed call only, as OpenAI and vLLM do; the model
    // wrote the others, so it is told they did not run (not counted: nothing was wrong with them).
    const first = problems.indexOf(undefined);
    // null: past the cap and answered by the first call over it (no result of its own).
    const answers = problems.map((p, i) =>
      p?.answeredAbove ? null : (p?.message ?? (request.parallelToolCalls || i === first ? undefined : NOT_RUN)),
    );
    // Every call gets its error result the next turn (withRejectedResults) when any call goes back; a turn with
    // none goes back as text, ending with `stop`. As vLLM does, complete calls go back even when max_tokens
    // cut the reply after them.
    const asCalls = first >= 0;
    const callId = (i: number): string => `call_${idPrefix ? `${idPrefix}_` : ''}${this.id}_${turn}_${i}`;
    const toolCalls = asCalls
      ? calls.flatMap((c, i) =>
          c.ok && answers[i] === undefined
            ? [{ id: callId(i), name: c.name, arguments: JSON.stringify(c.arguments) }]
            : [],
        )
      : [];
    this.rejected = asCalls
      ? answers.flatMap((message, index) =>
          typeof message === 'string' ? [{ index, id: callId(index), message }] : [],
        )
      : [];
    // The agent runs its own tools and answers an unknown name itself; the gateway only counts it.
    const offered = new Set(request.tools.map((t) => t.function.name));
    for (const call of toolCalls) {
      if (offered.has(call.name)) this.toolCallsByTool[call.name] = (this.toolCallsByTool[call.name] ?? 0) + 1;
      else this.toolErrorsByKind.unknown_tool = (this.toolErrorsByKind.unknown_tool ?? 0) + 1;
    }
    // The text exactly as generated (no trimming): with calls, the text before the first one, as vLLM returns it.
    const visible = afterReasoning(raw, parsed.reasoning);
    const text = asCalls ? visible.slice(0, Math.max(0, visible.indexOf(calls[0]!.raw))) : visible;
    return {
      turn,
      text,
      reasoning: parsed.reasoning,
      toolCalls,
      finishReason: finish === 'length' ? 'length' : toolCalls.length > 0 ? 'tool_calls' : 'stop',
      promptTokens: result.promptLength,
      completionTokens: ids.length,
      tokens: request.logprobs
        ? ids.map((id, i) => ({
            token: tokenizer.decode([id]),
            logprob: result.logprobs[i]!,
            top: (result.topLogprobs?.[i] ?? []).map((alt) => ({
              token: tokenizer.decode([alt.id]),
              logprob: alt.logprob,
            })),
          }))
        : [],
    };
  }
}

/** What the model is told of a well-formed call that `parallel_tool_calls: false` kept from the agent. */
const NOT_RUN = 'this call was not run: only one call per turn is allowed (parallel_tool_calls is false)';

/** The text after a leading reasoning block, markup included (an unclosed block is all reasoning). */
function afterReasoning(raw: string, reasoning: string): string {
  if (!reasoning) return raw;
  const close = raw.indexOf('</think>');
  return close < 0 ? '' : raw.slice(close + '</think>'.length);
}

/** The reply as the client will send it back in its history. */
function replyMessage(reply: GatewayReply): ChatMessage {
  const calls = reply.toolCalls.map((c) => ({
    id: c.id,
    type: 'function' as const,
    function: { name: c.name, arguments: JSON.parse(c.arguments) as Record<string, unknown> },
  }));
  return {
    role: 'assistant',
    content: reply.text,
    ...(reply.reasoning ? { reasoning_content: reply.reasoning } : {}),
    ...(calls.length ? { tool_calls: calls } : {}),
  };
}

/**
 * Runs a turn, answering its failures as the API does: a conversation the template cannot render is
 * the client's error (400); an engine or parser failure goes on as its own error (server.ts answers a
 * ProviderError with a 502).
 */
async function gatewayFailures<T>(turn: () => Promise<T>): Promise<T> {
  try {
    return await turn();
  } catch (error) {
    if (!(error instanceof EpisodeFailure)) throw error;
    const { cause } = error;
    if (error.kind !== 'template') throw cause;
    const why = (cause instanceof Error ? cause.message : String(cause)).split('\n')[0];
    throw new GatewayError(
      400,
      'unrenderable_messages',
      `the model's chat template cannot render these messages: ${why}`,
      'messages',
    );
  }
}
