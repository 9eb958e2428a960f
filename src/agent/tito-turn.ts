import { performance } from 'node:perf_hooks';
import type { EpisodeSampling, Generation, TokenLogprob } from '../engines/types.js';
import type { ChatMessage, ChatTool } from '../tokens/chat-types.js';
import type { IncrementalRenderer } from '../tokens/incremental-render.js';
import type { ModelTokenizer } from '../tokens/model-tokenizer.js';
import { parseReply } from '../tokens/reply-markers.js';
import type { ParsedTurn, ToolCallParser } from '../tokens/tool-calls/types.js';
import type { SegmentSource, TokenTrajectory } from '../tokens/trajectory.js';
import type { Engine } from '../engines/types.js';
import { blame, blameAsync } from './episode-failure.js';
import { type PolicyClock, policyVersionNow } from './policy-clock.js';

/** What every turn of one episode shares: the engine, the model's tokenizer, renderer and tool-call format. */
export interface TitoTurnContext {
  readonly engine: Engine;
  readonly tokenizer: ModelTokenizer;
  readonly renderer: IncrementalRenderer;
  readonly parser: ToolCallParser;
  readonly policyVersion: PolicyClock;
  /** Totals of the episode, added to by every turn. */
  readonly tally: TurnTally;
}

/** Per-episode totals a turn adds to. */
export interface TurnTally {
  engineMs: number;
  /** Environment tokens rendered (prompt, tool results, user turns). */
  promptTokens: number;
  generatedTokens: number;
}

/** One model request of an episode. */
export interface TitoTurnRequest {
  /** The trajectory the turn appends to; an empty one starts with a whole render (`fresh`). */
  readonly trajectory: TokenTrajectory;
  /** Render the whole conversation (a new trajectory, or a new segment after a rewrite) rather than continue it. */
  readonly fresh: boolean;
  /** The whole conversation when `fresh`, else only the messages added since the model's last reply. */
  readonly messages: readonly ChatMessage[];
  /** The model's last reply as the conversation holds it, which the continuation renders `messages` after. */
  readonly reply?: ChatMessage;
  /**
   * The environment tokens already rendered by the caller (the template's own rendering of a rewritten
   * prompt, or of what it adds); `messages` then only decide the tokens' source.
   */
  readonly environmentIds?: readonly number[];
  /** The tools offered: the template lists them when `fresh`; the parser reads their schemas every turn. */
  readonly tools: readonly ChatTool[];
  /** The model turn number, stamped on both the prompt and the reply segments. */
  readonly turn: number;
  readonly sampling: EpisodeSampling & { readonly topLogprobs?: number };
  /** Cap on the reply (agent.max_new_tokens, or lower). */
  readonly maxNewTokens: number;
  /** Cap on prompt + reply of the trajectory (agent.max_total_tokens). */
  readonly maxTotalTokens?: number;
  /** Stop strings applied after generation: the reply ends with the token that completes the earliest. */
  readonly stop?: readonly string[];
  readonly signal?: AbortSignal;
  /** Called once the prompt fits the budget, just before the engine is asked (a streamed reply starts then). */
  readonly onGenerating?: () => void;
  /**
   * Called with the engine's answer before the turn is recorded: what it throws leaves the trajectory
   * as it was (the gateway refuses a reply the engine could not give in the shape asked for).
   */
  readonly accept?: (generation: Generation) => void;
}

/** What one turn gave: the reply's tokens as recorded, its text and the calls parsed from it. */
export type TitoTurnResult =
  | {
      /** The prompt leaves no room for a reply within maxTotalTokens; nothing was generated or recorded. */
      readonly status: 'overBudget';
      readonly promptLength: number;
    }
  | {
      readonly status: 'generated';
      readonly ids: readonly number[];
      readonly logprobs: readonly number[];
      readonly topLogprobs?: readonly (readonly TokenLogprob[])[];
      /** stop, length or abort; `stop` also when a stop string ended the reply. */
      readonly finishReason: string;
      /** The reply's text: decoded without a final stop token, and ending before a stop string. */
      readonly text: string;
      readonly parsed: ParsedTurn;
      /** Tokens before the reply. */
      readonly promptLength: number;
      readonly latencyMs: number;
      readonly policyVersion: number;
    };

/**
 * One token-in/token-out turn, the heart of atk: renders only what the environment added since the
 * model's last token (or the whole prompt for a fresh trajectory), asks the engine with the trajectory's
 * exact ids, and appends the new tokens (mask 0) and the engine's own tokens and logprobs (mask 1). The
 * model's tokens are never re-rendered or re-encoded. A failure leaves the trajectory unchanged: the
 * prompt joins it only with the answer to it. Failures are tagged with their layer (template, engine,
 * parser) for the episode's record.
 */
export async function titoTurn(context: TitoTurnContext, request: TitoTurnRequest): Promise<TitoTurnResult> {
  const { engine, tokenizer, renderer, tally } = context;
  const { trajectory, fresh, messages, turn } = request;
  const environmentIds =
    request.environmentIds ??
    blame('template', () =>
      fresh
        ? renderer.initial(messages, request.tools)
        : renderer.continuation(trajectory.ids.at(-1), messages, request.reply),
    );
  const promptLength = trajectory.length + environmentIds.length;
  const room = Math.min(request.maxNewTokens, (request.maxTotalTokens ?? Infinity) - promptLength);
  if (room <= 0) return { status: 'overBudget', promptLength };

  request.onGenerating?.();
  const started = performance.now();
  // The version serving this request: a weight sync during generation does not change who sampled it.
  const requestedUnder = policyVersionNow(context.policyVersion);
  const generation = await blameAsync('engine', () =>
    engine.generate(
      trajectory.ids.concat(environmentIds),
      { ...request.sampling, maxTokens: room, stopTokenIds: tokenizer.eosTokenIds },
      request.signal,
    ),
  );
  const latencyMs = performance.now() - started;
  request.accept?.(generation);
  const cut = blame('parser', () => cutAtStop(tokenizer, generation.tokenIds, request.stop ?? []));
  const ids = generation.tokenIds.slice(0, cut.length);
  const logprobs = generation.logprobs.slice(0, cut.length);
  const topLogprobs = generation.topLogprobs?.slice(0, cut.length);
  const finishReason = cut.text === undefined ? generation.finishReason : 'stop';
  // A rollout worker's engine requests pass the run's thread, which stamps the version it served.
  const policyVersion = generation.policyVersion ?? requestedUnder;

  const source: Exclude<SegmentSource, 'model'> = fresh
    ? 'prompt'
    : messages.some((m) => m.role === 'user')
      ? 'user'
      : 'tool';
  trajectory.appendEnvironment(source, environmentIds, turn);
  trajectory.appendModel(ids, logprobs, turn, policyVersion, finishReason);
  trajectory.counters.turns++;
  if (finishReason === 'length') trajectory.counters.truncations++;
  tally.engineMs += latencyMs;
  tally.promptTokens += environmentIds.length;
  tally.generatedTokens += ids.length;

  // Decoded and parsed once the tokens are recorded: a decoder or parser that throws keeps them.
  const { text, parsed } = blame('parser', () => {
    const replyIds = withoutStopToken(tokenizer, ids);
    const decoded = cut.text ?? tokenizer.decode(replyIds);
    return {
      text: decoded,
      parsed: parseReply(tokenizer, context.parser, replyIds, decoded, { tools: request.tools }),
    };
  });
  return {
    status: 'generated',
    ids,
    logprobs,
    ...(topLogprobs ? { topLogprobs } : {}),
    finishReason,
    text,
    parsed,
    promptLength,
    latencyMs,
    policyVersion,
  };
}

/** The reply without a final stop token (the template closes the turn itself). */
function withoutStopToken(tokenizer: ModelTokenizer, ids: readonly number[]): readonly number[] {
  return ids.length > 0 && tokenizer.eosTokenIds.includes(ids[ids.length - 1]!) ? ids.slice(0, -1) : ids;
}

/**
 * Applies stop strings after generation: the reply keeps the tokens up to the one that completes the
 * earliest (the model did sample them, so their logprobs stay valid) and its text ends before the
 * string, as OpenAI's does. No stop string found: the whole reply, and no text.
 */
function cutAtStop(
  tokenizer: ModelTokenizer,
  ids: readonly number[],
  stops: readonly string[],
): { length: number; text?: string } {
  if (stops.length === 0) return { length: ids.length };
  const full = tokenizer.decode(ids);
  const hits = stops.map((s) => full.indexOf(s)).filter((at) => at >= 0);
  if (hits.length === 0) return { length: ids.length };
  const at = Math.min(...hits);
  const end = at + Math.min(...stops.filter((s) => full.indexOf(s) === at).map((s) => s.length));
  let length = 1;
  while (length < ids.length && tokenizer.decode(ids.slice(0, length)).length < end) length++;
  return { length, text: full.slice(0, at) };
}
