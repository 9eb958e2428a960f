import { performance } from 'node:perf_hooks';
import {
  Model,
  type BaseModelConfig,
  type Message,
  type ModelStreamEvent,
  type StreamOptions,
} from '@strands-agents/sdk';
import type { Engine, Generation } from '../engines/types.js';
import type { ChatMessage } from '../tokens/chat-types.js';
import { incrementalRenderer, type IncrementalRenderer } from '../tokens/incremental-render.js';
import type { ModelTokenizer } from '../tokens/model-tokenizer.js';
import type { SegmentSource } from '../tokens/trajectory.js';
import type { ParsedToolCall, ToolCallErrorKind, ToolCallParser } from '../tokens/tool-calls/types.js';
import { clipEcho } from '../util/clip.js';
import { systemPromptText, toChatMessages, toChatTools } from './chat-messages.js';
import { blame, blameAsync } from './episode-failure.js';
import type { EpisodeLedger } from './episode-ledger.js';
import type { GenerationSettings } from './generation-settings.js';

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
  readonly policyVersion: number | (() => number);
}

/**
 * A Strands model provider that speaks token ids to the engine and keeps the episode's exact token
 * trajectory. One instance per episode. The first call renders system prompt, tools and the first user
 * message; later calls render only the messages added since (tool results, user turns) and append them
 * after the model's own tokens, which are never re-rendered or re-encoded.
 */
export class TitoModel extends Model<BaseModelConfig> {
  private config: BaseModelConfig;
  private readonly renderer: IncrementalRenderer;
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
    this.renderer = blame('template', () => incrementalRenderer(options.tokenizer, options.chatTemplateKwargs ?? {}));
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
    const { ledger, engine, tokenizer } = this.options;
    const trajectory = ledger.trajectory;
    const { source, ids: environmentIds } = blame('template', () => this.renderNew(messages, streamOptions));
    // Strands appends the assistant message this call produces right after the current history.
    this.cursor = messages.length + 1;

    const promptLength = trajectory.length + environmentIds.length;
    const room = Math.min(this.options.maxNewTokens, (this.options.maxTotalTokens ?? Infinity) - promptLength);
    if (room <= 0) {
      ledger.stopReason = TITO_STOP.maxTotalTokens;
      yield { type: 'modelMessageStartEvent', role: 'assistant' };
      yield { type: 'modelMessageStopEvent', stopReason: TITO_STOP.maxTotalTokens };
      return;
    }

    const started = performance.now();
    const { policyVersion } = this.options;
    const version = typeof policyVersion === 'function' ? policyVersion() : policyVersion;
    const prompt = trajectory.ids.concat(environmentIds);
    const generation = await blameAsync('engine', () =>
      engine.generate(
        prompt,
        { ...this.options.sampling, maxTokens: room, stopTokenIds: tokenizer.eosTokenIds },
        streamOptions.cancelSignal,
      ),
    );
    const latencyMs = performance.now() - started;
    // The prompt joins the trajectory only with the answer to it, so a failed call leaves no dangling prompt.
    trajectory.appendEnvironment(source, environmentIds, this.turn);
    trajectory.appendModel(
      generation.tokenIds,
      generation.logprobs,
      this.turn,
      generation.policyVersion ?? version,
      generation.finishReason,
    );
    trajectory.counters.turns++;
    ledger.engineMs += latencyMs;
    ledger.promptTokens += environmentIds.length;
    ledger.generatedTokens += generation.tokenIds.length;
    if (generation.finishReason === 'length') trajectory.counters.truncations++;

    yield* this.events(generation, promptLength, latencyMs);
    this.turn++;
  }

  private renderNew(
    messages: Message[],
    streamOptions: StreamOptions,
  ): { source: Exclude<SegmentSource, 'model'>; ids: number[] } {
    if (this.options.ledger.trajectory.length === 0) {
      const system = systemPromptText(streamOptions.systemPrompt);
      const chat: ChatMessage[] = [
        ...(system ? [{ role: 'system' as const, content: system }] : []),
        ...messages.flatMap(toChatMessages),
      ];
      return { source: 'prompt', ids: this.renderer.initial(chat, toChatTools(streamOptions.toolSpecs)) };
    }
    const fresh = messages.slice(this.cursor);
    if (fresh.some((m) => m.role !== 'user')) {
      throw new Error('TitoModel: an assistant message the model did not generate was added to the conversation');
    }
    const chat = fresh.flatMap(toChatMessages);
    const lastToken = this.options.ledger.trajectory.ids.at(-1);
    return {
      source: chat.some((m) => m.role === 'user') ? 'user' : 'tool',
      ids: this.renderer.continuation(lastToken, chat),
    };
  }

  private *events(generation: Generation, promptLength: number, latencyMs: number): Iterable<ModelStreamEvent> {
    const { tokenizer, parser, ledger } = this.options;
    const ids = generation.tokenIds;
    const visible = ids.length > 0 && tokenizer.eosTokenIds.includes(ids[ids.length - 1]) ? ids.slice(0, -1) : ids;
    const parsed = blame('parser', () => parser.parse(tokenizer.decode(visible)));

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
    for (const [i, call] of parsed.calls.entries()) {
      const toolUseId = `call_${this.turn}_${i}`;
      const input = toolInput(call);
      const problem = call.ok ? input.problem : { kind: call.kind, message: call.message };
      if (problem) ledger.rejectedCalls.set(toolUseId, problem);
      yield* toolUseEvents(call, toolUseId, input.json);
    }
    const truncated = generation.finishReason === 'length';
    const stopReason = truncated
      ? TITO_STOP.truncated
      : generation.finishReason === 'abort'
        ? TITO_STOP.engineAbort
        : parsed.calls.length > 0
          ? 'toolUse'
          : 'endTurn';
    yield { type: 'modelMessageStopEvent', stopReason };
    yield {
      type: 'modelMetadataEvent',
      usage: { inputTokens: promptLength, outputTokens: ids.length, totalTokens: promptLength + ids.length },
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
