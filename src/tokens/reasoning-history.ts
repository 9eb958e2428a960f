import type { ChatMessage } from './chat-types.js';
import type { ModelTokenizer } from './model-tokenizer.js';

/** `agent.reasoning_history`: keep earlier turns' reasoning in the prompt, or strip it as the template does. */
export type ReasoningHistory = 'keep' | 'strip';

/** The recipe value that reads the setting off the model's chat template. */
export const AUTO_REASONING_HISTORY = 'auto';

const EARLIER = '__ATK_EARLIER_REASONING__';
const LATEST = '__ATK_LATEST_REASONING__';

/**
 * What the model's own template does with an earlier turn's reasoning: `strip` when it renders the
 * reasoning of the turn in progress but drops that of a turn before the last user message (Qwen3,
 * DeepSeek-R1), `keep` otherwise (a template that keeps both, or that renders no reasoning at all: there
 * is nothing to strip, and append-only rendering holds).
 */
export function detectReasoningHistory(
  tokenizer: ModelTokenizer,
  kwargs: Readonly<Record<string, unknown>> = {},
): ReasoningHistory {
  const conversation: ChatMessage[] = [
    { role: 'user', content: 'first' },
    { role: 'assistant', content: 'one', reasoning_content: EARLIER },
    { role: 'user', content: 'second' },
    { role: 'assistant', content: 'two', reasoning_content: LATEST },
  ];
  let rendered: string;
  try {
    rendered = tokenizer.renderChat(conversation, kwargs);
  } catch {
    return 'keep';
  }
  return rendered.includes(LATEST) && !rendered.includes(EARLIER) ? 'strip' : 'keep';
}

/** `agent.reasoning_history` with `auto` resolved against the template. */
export function resolveReasoningHistory(
  setting: string,
  tokenizer: ModelTokenizer,
  kwargs: Readonly<Record<string, unknown>> = {},
): ReasoningHistory {
  return setting === 'keep' || setting === 'strip' ? setting : detectReasoningHistory(tokenizer, kwargs);
}
