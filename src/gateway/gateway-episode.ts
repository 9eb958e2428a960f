import { performance } from 'node:perf_hooks';
import type { GenerationSettings } from '../agent/generation-settings.js';
import type { Engine, TokenLogprob } from '../engines/types.js';
import type { ChatMessage, ChatTool } from '../tokens/chat-types.js';
import { incrementalRenderer, type IncrementalRenderer } from '../tokens/incremental-render.js';
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
  readonly policyVersion: number | (() => number);
  /** Most model calls in the episode (agent.max_turns). */
  readonly maxTurns: number;
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
  engineMs = 0;
  promptTokens = 0;
  generatedTokens = 0;
  /** Set by a reward report (POST /episodes/<id>/reward). */
  reportedReward: number | undefined;
  private readonly renderer: IncrementalRenderer;
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
    this.renderer = incrementalRenderer(options.tokenizer, options.chatTemplateKwargs ?? {});
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
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async completeNow(
    request: ParsedCompletionRequest,
    signal: AbortSignal | undefined,
    onGenerating: ((turn: number) => void) | undefined,
  ): Promise<GatewayReply> {
    const { engine, tokenizer, maxTurns } = this.options;
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
    const prompt = this.render(fresh, trajectory, request.tools, added);
    const promptLength = trajectory.length + prompt.length;
    const budget = this.options.maxTotalTokens ?? Infinity;
    if (promptLength >= budget) {
      throw new GatewayError(
        400,
        'context_length_exceeded',
        `the conversation is ${promptLength} tokens, past the episode's budget of ${budget} (agent.max_total_tokens)`,
        'messages',
      );
    }
    const sampling = this.options.sampling;
    onGenerating?.(this.turns);
    const started = performance.now();
    // The version serving this request: a weight sync during generation does not change who sampled it.
    const { policyVersion } = this.options;
    const version = typeof policyVersion === 'function' ? policyVersion() : policyVersion;
    const generation = await engine.generate(
      trajectory.ids.concat(prompt),
      {
        maxTokens: Math.min(
          request.maxTokens ?? this.options.maxNewTokens,
          this.options.maxNewTokens,
          budget - promptLength,
        ),
        temperature: request.temperature ?? sampling.temperature,
        topP: request.topP ?? sampling.topP,
        topK: sampling.topK,
        // The episode's seed on every call, as the built-in agent sends it, so both sample alike.
        ...(request.seed !== undefined
          ? { seed: request.seed }
          : sampling.seed !== undefined
            ? { seed: sampling.seed }
            : {}),
        stopTokenIds: tokenizer.eosTokenIds,
        ...(request.topLogprobs > 0 ? { topLogprobs: request.topLogprobs } : {}),
      },
      signal,
    );
    if (request.topLogprobs > 0 && generation.topLogprobs?.length !== generation.tokenIds.length)
      throw new GatewayError(
        400,
        'top_logprobs_unsupported',
        `the ${engine.kind} engine did not return top logprobs; send top_logprobs: 0`,
        'top_logprobs',
      );
    this.engineMs += performance.now() - started;
    const cut = cutAtStop(tokenizer, generation.tokenIds, request.stop);
    const ids = generation.tokenIds.slice(0, cut.length);
    const logprobs = generation.logprobs.slice(0, cut.length);
    const tops = generation.topLogprobs?.slice(0, cut.length);
    const finish = cut.stopped ? 'stop' : generation.finishReason;

    // The request's tokens join the trajectory only with the answer to them: a failed call leaves none.
    if (fresh) this.segments.push({ trajectory, reason: reason ?? null });
    const turn = this.turns++;
    const source = fresh ? 'prompt' : added.some((m) => m.role === 'user') ? 'user' : 'tool';
    trajectory.appendEnvironment(source, prompt, turn);
    trajectory.appendModel(ids, logprobs, turn, version, finish);
    trajectory.counters.turns++;
    if (finish === 'length') trajectory.counters.truncations++;
    this.promptTokens += prompt.length;
    this.generatedTokens += ids.length;
    this.lastFinish = finish;

    const reply = this.reply(turn, ids, logprobs, tops, cut.text, finish, request, promptLength, trajectory);
    const message = replyMessage(reply);
    this.recorded = [...request.messages, message];
    this.shown = [...(fresh ? [] : this.shown), ...added, message];
    this.recordedTools = request.tools;
    return reply;
  }

  /** The request's new tokens: the whole prompt for a fresh segment, else only the messages after the recorded ones. */
  private render(
    fresh: boolean,
    trajectory: TokenTrajectory,
    tools: readonly ChatTool[],
    added: readonly ChatMessage[],
  ): number[] {
    try {
      return fresh ? this.renderer.initial(added, tools) : this.renderer.continuation(trajectory.ids.at(-1), added);
    } catch (error) {
      const why = (error instanceof Error ? error.message : String(error)).split('\n')[0];
      throw new GatewayError(
        400,
        'unrenderable_messages',
        `the model's chat template cannot render these messages: ${why}`,
        'messages',
      );
    }
  }

  private reply(
    turn: number,
    ids: readonly number[],
    logprobs: readonly number[],
    tops: readonly (readonly TokenLogprob[])[] | undefined,
    cutText: string | undefined,
    finish: string,
    request: ParsedCompletionRequest,
    promptLength: number,
    trajectory: TokenTrajectory,
  ): GatewayReply {
    const { tokenizer, parser } = this.options;
    const visible = ids.length > 0 && tokenizer.eosTokenIds.includes(ids[ids.length - 1]!) ? ids.slice(0, -1) : ids;
    const raw = cutText ?? tokenizer.decode(visible);
    const parsed = parser.parse(raw);
    const malformed = parsed.calls.filter((c) => !c.ok);
    for (const call of malformed) {
      if (!call.ok) this.toolErrorsByKind[call.kind] = (this.toolErrorsByKind[call.kind] ?? 0) + 1;
    }
    trajectory.counters.toolErrors += malformed.length;
    // As in the built-in agent, well-formed calls run and each malformed one is answered with an error the
    // model sees next turn (withRejectedResults). A turn with no well-formed call goes back as text, ending with `stop`.
    const asCalls = request.parseToolCalls && parsed.calls.some((c) => c.ok) && finish !== 'length';
    const callId = (i: number): string => `call_${this.id}_${turn}_${i}`;
    const toolCalls = asCalls
      ? parsed.calls.flatMap((c, i) =>
          c.ok ? [{ id: callId(i), name: c.name, arguments: JSON.stringify(c.arguments) }] : [],
        )
      : [];
    this.rejected = asCalls
      ? parsed.calls.flatMap((c, index) => (c.ok ? [] : [{ index, id: callId(index), message: c.message }]))
      : [];
    // The agent runs its own tools and answers an unknown name itself; the gateway only counts it.
    const offered = new Set(request.tools.map((t) => t.function.name));
    for (const call of toolCalls)
      if (!offered.has(call.name)) this.toolErrorsByKind.unknown_tool = (this.toolErrorsByKind.unknown_tool ?? 0) + 1;
    const text = asCalls ? parsed.text : afterReasoning(raw, parsed.reasoning).trim();
    return {
      turn,
      text,
      reasoning: parsed.reasoning,
      toolCalls,
      finishReason: finish === 'length' ? 'length' : toolCalls.length > 0 ? 'tool_calls' : 'stop',
      promptTokens: promptLength,
      completionTokens: ids.length,
      tokens: request.logprobs
        ? ids.map((id, i) => ({
            token: tokenizer.decode([id]),
            logprob: logprobs[i]!,
            top: (tops?.[i] ?? []).map((alt) => ({ token: tokenizer.decode([alt.id]), logprob: alt.logprob })),
          }))
        : [],
    };
  }
}

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
 * Applies `stop` strings after generation: the reply keeps the tokens up to the one that completes the
 * earliest stop string (the model did sample them, so their logprobs stay valid) and its text ends
 * before the string, as OpenAI's does.
 */
function cutAtStop(
  tokenizer: ModelTokenizer,
  ids: readonly number[],
  stops: readonly string[],
): { length: number; stopped: boolean; text?: string } {
  if (stops.length === 0) return { length: ids.length, stopped: false };
  const full = tokenizer.decode(ids);
  const hits = stops.map((s) => full.indexOf(s)).filter((at) => at >= 0);
  if (hits.length === 0) return { length: ids.length, stopped: false };
  const at = Math.min(...hits);
  const end = at + Math.min(...stops.filter((s) => full.indexOf(s) === at).map((s) => s.length));
  let length = 1;
  while (length < ids.length && tokenizer.decode(ids.slice(0, length)).length < end) length++;
  return { length, stopped: true, text: full.slice(0, at) };
}
