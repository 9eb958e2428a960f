import type { ChatMessage, ChatTool } from '../tokens/chat-types.js';
import type { IncrementalRenderer } from '../tokens/incremental-render.js';
import type { ModelTokenizer } from '../tokens/model-tokenizer.js';
import type { ReasoningHistory } from '../tokens/reasoning-history.js';
import type { ContextSummarizer } from './context-summarizer.js';

/**
 * `agent.context` of the built-in agent: what happens once a turn's prompt passes `budgetTokens`.
 * `sliding_window` keeps the system prompt, the task and the last turns that fit (at most `keepLastTurns`),
 * after blanking the oldest tool results first when `drop` is `tool_results`; `summarize` does the same
 * and puts a summary of what was dropped in its place: the policy's own (trained), or with a `summarizer`
 * the fixed model's (environment text, not trained).
 */
export type ContextPolicy =
  | { readonly strategy: 'none' }
  | {
      readonly strategy: 'sliding_window' | 'summarize';
      readonly budgetTokens: number;
      readonly keepLastTurns: number;
      readonly drop: 'turns' | 'tool_results';
      /** summarize: the user message that asks for the summary. */
      readonly summaryPrompt?: string;
      /** summarize: most tokens of the summary. */
      readonly maxSummaryTokens?: number;
      /** summarize: the fixed model that writes the summary (`agent.context.model`); absent, the policy does. */
      readonly summarizer?: ContextSummarizer;
    };

/**
 * Why a segment ended: the trajectory file and the step metrics name it. `summarize`: the policy's summary
 * turn follows in a segment of its own; `summarized`: the next segment carries the policy's summary;
 * `summarized_fixed`: the next segment carries the fixed model's (`agent.context.model`).
 */
export type RewriteReason = 'reasoning_history' | 'sliding_window' | 'summarize' | 'summarized' | 'summarized_fixed';

/** Text a blanked tool result shows the model. */
export const DROPPED_TOOL_RESULT = '[tool result dropped to fit the context]';

/** The next turn's environment tokens: appended to the segment, or the whole prompt of a new one. */
export type PromptPlan =
  | { readonly kind: 'extend'; readonly ids: readonly number[] }
  | { readonly kind: 'rewrite'; readonly ids: readonly number[]; readonly reason: RewriteReason };

/** What planning a turn's prompt reads. */
export interface PromptPlanInput {
  readonly tokenizer: ModelTokenizer;
  readonly renderer: IncrementalRenderer;
  readonly kwargs: Readonly<Record<string, unknown>>;
  readonly reasoningHistory: ReasoningHistory;
  /** The segment's tokens so far. */
  readonly segment: readonly number[];
  /** The whole conversation the model is to answer. */
  readonly history: readonly ChatMessage[];
  /** The messages added since the model's last reply. */
  readonly added: readonly ChatMessage[];
  readonly tools: readonly ChatTool[];
}

/**
 * The next prompt of a conversation already under way. `keep`: the incremental continuation (the
 * model's tokens are never re-rendered). `strip`: the template's own rendering of the whole
 * conversation; while its text extends the segment's (the template kept every earlier turn as the
 * model wrote it) only the rest is encoded, else the prompt starts a new segment.
 */
export function planPrompt(input: PromptPlanInput): PromptPlan {
  const { tokenizer, segment } = input;
  if (input.reasoningHistory === 'keep') {
    const reply = input.history[input.history.length - input.added.length - 1];
    return { kind: 'extend', ids: input.renderer.continuation(segment.at(-1), input.added, reply) };
  }
  const text = tokenizer.renderChat(input.history, { ...input.kwargs, tools: input.tools, addGenerationPrompt: true });
  const before = tokenizer.decode(segment);
  if (text.startsWith(before)) return { kind: 'extend', ids: tokenizer.encode(text.slice(before.length)) };
  return { kind: 'rewrite', ids: input.renderer.initial(input.history, input.tools), reason: 'reasoning_history' };
}

/** A conversation cut to fit, and what was cut out of it. */
export interface Windowed {
  readonly messages: ChatMessage[];
  /** The messages left out (blanked tool results as they were), in order: what a summary covers. */
  readonly dropped: ChatMessage[];
  readonly ids: number[];
}

/**
 * The conversation cut to fit `budgetTokens`: the head (everything up to the task, the first user
 * message) always stays; then, with `drop: tool_results`, the oldest tool results before the last turn
 * are blanked one by one; then only the last turns that fit are kept (a turn: an assistant message and
 * the messages after it), at most `keepLastTurns` and at least the last. The last candidate is returned
 * even when it does not fit (the turn's own budget check then ends the episode).
 */
export function slidingWindow(
  history: readonly ChatMessage[],
  policy: Extract<ContextPolicy, { strategy: 'sliding_window' | 'summarize' }>,
  render: (messages: readonly ChatMessage[]) => number[],
): Windowed {
  const { head, turns } = splitTurns(history);
  const body = turns.flat();
  if (policy.drop === 'tool_results') {
    const blanked = body.slice();
    const dropped: ChatMessage[] = [];
    const lastTurnStart = body.length - (turns.at(-1)?.length ?? 0);
    for (let i = 0; i < lastTurnStart; i++) {
      const message = blanked[i]!;
      if (message.role !== 'tool' || message.content === DROPPED_TOOL_RESULT) continue;
      dropped.push(message);
      blanked[i] = { ...message, content: DROPPED_TOOL_RESULT };
      const messages = [...head, ...blanked];
      const ids = render(messages);
      if (ids.length <= policy.budgetTokens) return { messages, dropped, ids };
    }
  }
  let last: Windowed | undefined;
  for (let k = Math.min(policy.keepLastTurns, turns.length); k >= 1; k--) {
    const messages = [...head, ...turns.slice(turns.length - k).flat()];
    const ids = render(messages);
    last = { messages, dropped: turns.slice(0, turns.length - k).flat(), ids };
    if (ids.length <= policy.budgetTokens) return last;
  }
  const messages = [...head, ...body];
  return last ?? { messages, dropped: [], ids: render(messages) };
}

/** The head (up to and including the first user message, and anything before the first reply after it) and the turns. */
function splitTurns(history: readonly ChatMessage[]): { head: ChatMessage[]; turns: ChatMessage[][] } {
  const task = history.findIndex((m) => m.role === 'user');
  let start = task + 1;
  while (start < history.length && history[start]!.role !== 'assistant') start++;
  const turns: ChatMessage[][] = [];
  for (const message of history.slice(start)) {
    if (message.role === 'assistant' || turns.length === 0) turns.push([message]);
    else turns.at(-1)!.push(message);
  }
  return { head: history.slice(0, start), turns };
}

/** The summarize request: the head, the dropped messages, and the user message asking for the summary. */
export function summaryRequest(
  head: readonly ChatMessage[],
  dropped: readonly ChatMessage[],
  prompt: string,
): ChatMessage[] {
  return [...head, ...dropped, { role: 'user', content: prompt }];
}

/** The conversation once summarised: the head, the summary as a user message, the kept turns. */
export function withSummary(windowed: readonly ChatMessage[], summary: string): ChatMessage[] {
  const { head, turns } = splitTurns(windowed);
  return [...head, { role: 'user', content: `${SUMMARY_HEADER}\n${summary}` }, ...turns.flat()];
}

/** Leads the summary message of a summarised conversation. */
export const SUMMARY_HEADER = 'Summary of the earlier part of this conversation:';

/** The head of a conversation (system prompt, opening, task). */
export function conversationHead(history: readonly ChatMessage[]): ChatMessage[] {
  return splitTurns(history).head;
}
