import {
  Model,
  type BaseModelConfig,
  type Message,
  type ModelStreamEvent,
  type StreamOptions,
} from '@strands-agents/sdk';
import type { Engine } from '../engines/types.js';
import type { ChatMessage } from '../tokens/chat-types.js';
import { incrementalRenderer } from '../tokens/incremental-render.js';
import type { ModelTokenizer } from '../tokens/model-tokenizer.js';
import type { ParsedToolCall, ToolCallErrorKind, ToolCallParser } from '../tokens/tool-calls/types.js';
import { clipEcho } from '../util/clip.js';
import { systemPromptText, toChatMessages, toChatTools } from './chat-messages.js';
import { blame } from './episode-failure.js';
import { callProblem, type EpisodeLedger } from './episode-ledger.js';
import type { GenerationSettings } from './generation-settings.js';
import type { PolicyClock } from './policy-clock.js';
import { type TitoTurnContext, type TitoTurnResult, titoTurn } from './tito-turn.js';

type GeneratedTurn = Extract<TitoTurnResult, { status: 'generated' }>;

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
    const fresh = ledger.trajectory.length === 0;
    const chat = blame('template', () => this.newMessages(messages, streamOptions, fresh));
    // Strands appends the assistant message this call produces right after the current history.
    this.cursor = messages.length + 1;
    const result = await titoTurn(this.context, {
      trajectory: ledger.trajectory,
      fresh,
      messages: chat,
      tools: toChatTools(streamOptions.toolSpecs),
      turn: this.turn,
      sampling: this.options.sampling,
      maxNewTokens: this.options.maxNewTokens,
      ...(this.options.maxTotalTokens === undefined ? {} : { maxTotalTokens: this.options.maxTotalTokens }),
      ...(streamOptions.cancelSignal ? { signal: streamOptions.cancelSignal } : {}),
    });
    if (result.status === 'overBudget') {
      ledger.stopReason = TITO_STOP.maxTotalTokens;
      yield { type: 'modelMessageStartEvent', role: 'assistant' };
      yield { type: 'modelMessageStopEvent', stopReason: TITO_STOP.maxTotalTokens };
      return;
    }
    yield* this.events(result);
    this.turn++;
  }

  /** The chat messages the next turn adds: the whole first prompt, then only messages the trajectory lacks. */
  private newMessages(messages: Message[], streamOptions: StreamOptions, fresh: boolean): ChatMessage[] {
    if (fresh) {
      const system = systemPromptText(streamOptions.systemPrompt);
      return [...(system ? [{ role: 'system' as const, content: system }] : []), ...messages.flatMap(toChatMessages)];
    }
    const added = messages.slice(this.cursor);
    if (added.some((m) => m.role !== 'user')) {
      throw new Error('TitoModel: an assistant message the model did not generate was added to the conversation');
    }
    return added.flatMap(toChatMessages);
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
    const cap = this.options.maxToolCallsPerTurn ?? Number.POSITIVE_INFINITY;
    for (const [i, call] of parsed.calls.entries()) {
      const toolUseId = `call_${this.turn}_${i}`;
      const input = toolInput(call);
      const problem = callProblem(call, i, cap) ?? input.problem;
      if (problem) ledger.rejectedCalls.set(toolUseId, problem);
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
