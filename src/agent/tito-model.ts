import {
  Model,
  type BaseModelConfig,
  type Message,
  type ModelStreamEvent,
  type StreamOptions,
} from '@strands-agents/sdk';
import type { Engine } from '../engines/types.js';
import type { ChatMessage, ChatTool } from '../tokens/chat-types.js';
import { incrementalRenderer } from '../tokens/incremental-render.js';
import type { ModelTokenizer } from '../tokens/model-tokenizer.js';
import type { ParsedToolCall, ToolCallErrorKind, ToolCallParser } from '../tokens/tool-calls/types.js';
import { clipEcho } from '../util/clip.js';
import { systemPromptText, toChatMessages, toChatTools } from './chat-messages.js';
import { fixedModelSummary } from './context-summarizer.js';
import { blame } from './episode-failure.js';
import { callProblems, type EpisodeLedger } from './episode-ledger.js';
import type { GenerationSettings } from './generation-settings.js';
import type { PolicyClock } from './policy-clock.js';
import type { ReasoningHistory } from '../tokens/reasoning-history.js';
import { TokenTrajectory } from '../tokens/trajectory.js';
import {
  type ContextPolicy,
  conversationHead,
  planPrompt,
  type RewriteReason,
  slidingWindow,
  summaryRequest,
  withSummary,
} from './long-episode.js';
import { type TitoTurnContext, type TitoTurnRequest, type TitoTurnResult, titoTurn } from './tito-turn.js';

type GeneratedTurn = Extract<TitoTurnResult, { status: 'generated' }>;

/** A planned turn: the segment's continuation (with the messages it adds), or a new segment's whole prompt. */
type TurnPlan =
  | { readonly kind: 'extend'; readonly ids: readonly number[]; readonly added: readonly ChatMessage[] }
  | { readonly kind: 'rewrite'; readonly ids: readonly number[]; readonly reason: RewriteReason };

/** Custom stop reasons; the Strands loop continues only on 'toolUse', so each of these ends the episode cleanly. */
export const TITO_STOP = {
  truncated: 'truncated',
  maxTotalTokens: 'maxTotalTokens',
  engineAbort: 'engineAbort',
} as const;

/** What one episode's model provider needs. */
export interface TitoModelOptions extends GenerationSettings {
  readonly engine: Engine;
  readonly tokenizer: ModelTokenizer;
  readonly parser: ToolCallParser;
  readonly ledger: EpisodeLedger;
  /**
   * Stamped on every model segment: a number, or a function read at each engine request (asynchronous
   * rollouts: the engine may serve a newer policy from one turn to the next).
   */
  readonly policyVersion: PolicyClock;
  /** `agent.reasoning_history` resolved: `strip` renders each prompt as the template does. Default: keep. */
  readonly reasoningHistory?: ReasoningHistory;
  /** `agent.context`: what happens once a prompt passes its budget. Default: nothing (the episode ends at maxTotalTokens). */
  readonly context?: ContextPolicy;
}

/**
 * A Strands model provider that speaks token ids to the engine and keeps the episode's exact token
 * trajectory. One instance per episode. Each call is one token-in/token-out turn (tito-turn.ts) given
 * the messages the trajectory lacks: system prompt, tools and the first user message at first, then only
 * the tool results and user turns added since; the turn's reply becomes Strands stream events.
 */
export class TitoModel extends Model<BaseModelConfig> {
  private config: BaseModelConfig;
  private readonly context: TitoTurnContext;
  /** Index of the first message not yet in the trajectory. */
  private cursor = 0;
  private turn = 0;
  /** The conversation as the next prompt renders it: rewritten by a sliding window or a summary. */
  private history: ChatMessage[] = [];

  constructor(private readonly options: TitoModelOptions) {
    super();
    this.config = {
      modelId: options.engine.model,
      maxTokens: options.maxNewTokens,
      temperature: options.sampling.temperature,
      topP: options.sampling.topP,
    };
    const renderer = blame('template', () => incrementalRenderer(options.tokenizer, options.chatTemplateKwargs ?? {}));
    const { engine, tokenizer, parser, policyVersion, ledger } = options;
    this.context = { engine, tokenizer, renderer, parser, policyVersion, tally: ledger };
  }

  /**
   * The first `count` messages were taken out of the agent's history after being rendered (see
   * rendered-history.ts): the next call's messages are indexed from after them.
   */
  forgetRendered(count: number): void {
    this.cursor = Math.max(0, this.cursor - count);
  }

  override updateConfig(modelConfig: BaseModelConfig): void {
    this.config = { ...this.config, ...modelConfig };
  }

  override getConfig(): BaseModelConfig {
    return this.config;
  }

  /** Exact: the tokens the trajectory already holds (the SDK asks before every call). */
  override countTokens(): Promise<number> {
    return Promise.resolve(this.options.ledger.trajectory.length);
  }

  override async *stream(messages: Message[], streamOptions: StreamOptions = {}): AsyncIterable<ModelStreamEvent> {
    const { ledger } = this.options;
    const fresh = ledger.trajectory.length === 0 && ledger.priorSegments.length === 0;
    const added = blame('template', () => this.newMessages(messages, streamOptions, fresh));
    // Strands appends the assistant message this call produces right after the current history.
    this.cursor = messages.length + 1;
    const tools = toChatTools(streamOptions.toolSpecs);
    const base = {
      tools,
      sampling: this.options.sampling,
      maxNewTokens: this.options.maxNewTokens,
      ...(this.options.maxTotalTokens === undefined ? {} : { maxTotalTokens: this.options.maxTotalTokens }),
      ...(streamOptions.cancelSignal ? { signal: streamOptions.cancelSignal } : {}),
    };
    let result: TitoTurnResult;
    if (fresh) {
      result = await titoTurn(this.context, {
        ...base,
        trajectory: ledger.trajectory,
        fresh,
        messages: added,
        turn: this.turn,
      });
    } else {
      const plan = await this.plan(added, tools, base);
      result = await this.run(plan, base);
    }
    if (result.status === 'overBudget') {
      ledger.stopReason = TITO_STOP.maxTotalTokens;
      yield { type: 'modelMessageStartEvent', role: 'assistant' };
      yield { type: 'modelMessageStopEvent', stopReason: TITO_STOP.maxTotalTokens };
      return;
    }
    yield* this.events(result);
    ledger.replyPending = true;
    this.turn++;
  }

  /**
   * The next prompt: the continuation of the segment, or the whole prompt of a new one (a template
   * that strips earlier reasoning, a context that passed its budget: windowed, or summarised by the
   * policy first, the summary being a trained turn of its own segment).
   */
  private async plan(
    added: readonly ChatMessage[],
    tools: readonly ChatTool[],
    base: Omit<TitoTurnRequest, 'trajectory' | 'fresh' | 'messages' | 'turn'>,
  ): Promise<TurnPlan> {
    const { ledger, tokenizer, context: policy } = this.options;
    const kwargs = this.options.chatTemplateKwargs ?? {};
    const render = (conversation: readonly ChatMessage[]): number[] =>
      this.context.renderer.initial(conversation, tools);
    const plan = blame('template', () =>
      planPrompt({
        tokenizer,
        renderer: this.context.renderer,
        kwargs,
        reasoningHistory: this.options.reasoningHistory ?? 'keep',
        segment: ledger.trajectory.ids,
        history: this.history,
        added,
        tools,
      }),
    );
    const promptLength = plan.kind === 'extend' ? ledger.trajectory.length + plan.ids.length : plan.ids.length;
    if (!policy || policy.strategy === 'none' || promptLength <= policy.budgetTokens)
      return plan.kind === 'extend' ? { ...plan, added } : plan;
    const windowed = blame('template', () => slidingWindow(this.history, policy, render));
    ledger.contextDroppedTokens += Math.max(0, promptLength - windowed.ids.length);
    if (policy.strategy === 'summarize' && windowed.dropped.length > 0) {
      const summary = await this.summarise(windowed.dropped, tools, base, render);
      if (summary !== undefined) {
        this.history = withSummary(windowed.messages, summary.text);
        return { kind: 'rewrite', ids: render(this.history), reason: summary.reason };
      }
    }
    this.history = windowed.messages;
    return { kind: 'rewrite', ids: windowed.ids, reason: 'sliding_window' };
  }

  /**
   * A summary of `dropped` and the reason of the segment that carries it. From the fixed model of
   * `agent.context.model` when there is one (`summarized_fixed`): only its text enters the episode, as the
   * next segment's environment tokens. Else from the policy in a segment of its own, ended with reason
   * `summarize` (`summarized`). Undefined when the request does not fit or the reply is cut off (the
   * window is used without one).
   */
  private async summarise(
    dropped: readonly ChatMessage[],
    tools: readonly ChatTool[],
    base: Omit<TitoTurnRequest, 'trajectory' | 'fresh' | 'messages' | 'turn'>,
    render: (conversation: readonly ChatMessage[]) => number[],
  ): Promise<{ text: string; reason: RewriteReason } | undefined> {
    const policy = this.options.context;
    if (policy?.strategy !== 'summarize') return undefined;
    const request = summaryRequest(conversationHead(this.history), dropped, policy.summaryPrompt ?? '');
    const maxTokens = policy.maxSummaryTokens ?? this.options.maxNewTokens;
    if (policy.summarizer) {
      const fixed = await fixedModelSummary(policy.summarizer, request, tools, maxTokens, base.signal);
      return fixed.text === undefined ? undefined : { text: fixed.text, reason: 'summarized_fixed' };
    }
    const ids = blame('template', () => render(request));
    const result = await this.run(
      { kind: 'rewrite', ids, reason: 'summarize' },
      { ...base, tools, maxNewTokens: maxTokens },
      request,
    );
    if (result.status !== 'generated') return undefined;
    const { text, reasoning } = result.parsed;
    this.options.ledger.conversation = [
      ...request,
      { role: 'assistant', content: text, ...(reasoning ? { reasoning_content: reasoning } : {}) },
    ];
    this.turn++;
    this.options.ledger.summaryTurns++;
    return result.finishReason === 'stop' ? { text: result.parsed.text, reason: 'summarized' } : undefined;
  }

  /**
   * Runs a planned turn: appended to the segment, or the first turn of a new one (kept only when it
   * generated) rendering `conversation`, the ended segment keeping the conversation it rendered.
   */
  private async run(
    plan: TurnPlan,
    base: Omit<TitoTurnRequest, 'trajectory' | 'fresh' | 'messages' | 'turn'>,
    conversation: ChatMessage[] = this.history,
  ): Promise<TitoTurnResult> {
    const { ledger } = this.options;
    if (plan.kind === 'extend')
      return titoTurn(this.context, {
        ...base,
        trajectory: ledger.trajectory,
        fresh: false,
        messages: plan.added,
        environmentIds: plan.ids,
        turn: this.turn,
      });
    const segment = new TokenTrajectory();
    Object.assign(segment.counters, ledger.trajectory.counters);
    const result = await titoTurn(this.context, {
      ...base,
      trajectory: segment,
      fresh: true,
      messages: this.history,
      environmentIds: plan.ids,
      turn: this.turn,
    });
    if (result.status === 'generated') {
      ledger.startSegment(plan.reason, segment, throughLastReply(ledger.conversation));
      ledger.conversation = conversation;
      ledger.replyPending = false;
    }
    return result;
  }

  /**
   * The messages the next turn adds, also kept in the conversation the planner renders: the whole
   * first prompt, then the model's last reply (from the agent's messages) and the messages the
   * trajectory lacks.
   */
  private newMessages(messages: Message[], streamOptions: StreamOptions, fresh: boolean): ChatMessage[] {
    if (fresh) {
      const system = systemPromptText(streamOptions.systemPrompt);
      const first = [
        ...(system ? [{ role: 'system' as const, content: system }] : []),
        ...messages.flatMap(toChatMessages),
      ];
      this.history = first.slice();
      this.options.ledger.conversation = this.history;
      return first;
    }
    const added = messages.slice(this.cursor);
    if (added.some((m) => m.role !== 'user')) {
      throw new Error('TitoModel: an assistant message the model did not generate was added to the conversation');
    }
    const reply = messages[this.cursor - 1];
    if (reply?.role === 'assistant') this.history.push(...toChatMessages(reply));
    this.options.ledger.replyPending = false;
    const chat = added.flatMap(toChatMessages);
    this.history.push(...chat);
    return chat;
  }

  private *events(turn: GeneratedTurn): Iterable<ModelStreamEvent> {
    const { ledger } = this.options;
    const { parsed, promptLength, latencyMs } = turn;
    yield { type: 'modelMessageStartEvent', role: 'assistant' };
    if (parsed.reasoning) {
      yield { type: 'modelContentBlockStartEvent' };
      yield { type: 'modelContentBlockDeltaEvent', delta: { type: 'reasoningContentDelta', text: parsed.reasoning } };
      yield { type: 'modelContentBlockStopEvent' };
    }
    if (parsed.text) {
      yield { type: 'modelContentBlockStartEvent' };
      yield { type: 'modelContentBlockDeltaEvent', delta: { type: 'textDelta', text: parsed.text } };
      yield { type: 'modelContentBlockStopEvent' };
    }
    const problems = callProblems(parsed.calls, this.options.maxToolCallsPerTurn ?? Number.POSITIVE_INFINITY);
    let answering = '';
    for (const [i, call] of parsed.calls.entries()) {
      const problem = problems[i];
      if (problem?.answeredAbove) {
        // Answered by the first call past the cap: counted like it, recorded after it, no tool use of its own.
        const name = call.ok ? call.name : (call.name ?? 'invalid_tool_call');
        ledger.countToolError(problem.kind);
        ledger.countToolCall(name, 'error');
        const record = {
          name,
          input: call.ok ? call.arguments : {},
          status: 'error' as const,
          output: `Error: ${problem.message}`,
        };
        ledger.answeredBy.set(answering, [...(ledger.answeredBy.get(answering) ?? []), record]);
        continue;
      }
      const toolUseId = `call_${this.turn}_${i}`;
      answering = toolUseId;
      const input = toolInput(call);
      const rejected = problem ?? input.problem;
      if (rejected) ledger.rejectedCalls.set(toolUseId, rejected);
      yield* toolUseEvents(call, toolUseId, input.json);
    }
    const stopReason =
      turn.finishReason === 'length'
        ? TITO_STOP.truncated
        : turn.finishReason === 'abort'
          ? TITO_STOP.engineAbort
          : parsed.calls.length > 0
            ? 'toolUse'
            : 'endTurn';
    yield { type: 'modelMessageStopEvent', stopReason };
    yield {
      type: 'modelMetadataEvent',
      usage: {
        inputTokens: promptLength,
        outputTokens: turn.ids.length,
        totalTokens: promptLength + turn.ids.length,
      },
      metrics: { latencyMs },
    };
  }
}

/** A call as a Strands toolUse block; a malformed one gets `{}` input (the SDK throws on invalid JSON) and is rejected by the guard. */
function* toolUseEvents(call: ParsedToolCall, toolUseId: string, inputJson: string): Iterable<ModelStreamEvent> {
  const name = call.ok ? call.name : (call.name ?? 'invalid_tool_call');
  yield { type: 'modelContentBlockStartEvent', start: { type: 'toolUseStart', name, toolUseId } };
  yield { type: 'modelContentBlockDeltaEvent', delta: { type: 'toolUseInputDelta', input: inputJson } };
  yield { type: 'modelContentBlockStopEvent' };
}

/**
 * The call's arguments as the JSON the SDK re-parses. Serialising arguments the parser accepted can
 * still fail (a nesting past the stack, should a parser not bound it); such a call is rejected like
 * a malformed one instead of failing the episode.
 */
function toolInput(call: ParsedToolCall): { json: string; problem?: { kind: ToolCallErrorKind; message: string } } {
  if (!call.ok) return { json: '{}' };
  try {
    return { json: JSON.stringify(call.arguments) };
  } catch (error) {
    return {
      json: '{}',
      problem: {
        kind: 'bad_call',
        message: `the arguments of the call to '${clipEcho(call.name)}' cannot be serialised (${(error as Error).message})`,
      },
    };
  }
}

/** A conversation up to and including its last assistant message (what a segment's drift audit renders). */
export function throughLastReply(conversation: readonly ChatMessage[]): ChatMessage[] {
  return conversation.slice(0, conversation.map((m) => m.role).lastIndexOf('assistant') + 1);
}
