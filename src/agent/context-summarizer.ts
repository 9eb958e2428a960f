import type { Engine } from '../engines/types.js';
import type { ChatMessage, ChatTool } from '../tokens/chat-types.js';
import type { ModelTokenizer } from '../tokens/model-tokenizer.js';
import { blame } from './episode-failure.js';

/**
 * `agent.context.model` started: a fixed model, never trained, that writes the summaries of `summarize`.
 * Its tokenizer is its own (it need not be the policy's): only the text of its summary reaches the
 * episode, as an environment message.
 */
export interface ContextSummarizer {
  readonly engine: Engine;
  readonly tokenizer: ModelTokenizer;
  /** Longest prompt plus summary its engine takes (its `max_model_len`); a longer request is not sent. */
  readonly maxModelLen: number;
}

/** What the fixed model wrote: its summary text, or undefined when it is unusable, and its token count. */
export interface FixedSummary {
  readonly text: string | undefined;
  readonly tokens: number;
}

const UNUSABLE: FixedSummary = { text: undefined, tokens: 0 };

/**
 * Asks the fixed model for the summary `request` asks for (the head, the dropped messages, the summary
 * prompt), rendered with its own chat template (without the policy's chat_template_kwargs, which are the
 * policy's template's) and answered greedily: the summary is part of the environment the policy sees, so a
 * group's episodes that dropped the same messages are shown the same summary. A leading `<think>` block is
 * not part of it. The text is undefined when the request with `maxTokens` does not fit the engine's
 * window (it is not sent), or the reply was cut off at `maxTokens` or is empty: the plain window is used.
 * @throws EpisodeFailure (template) when its template cannot render the request; ProviderError from the engine; rethrows the signal's reason when `signal` aborts.
 */
export async function fixedModelSummary(
  summarizer: ContextSummarizer,
  request: readonly ChatMessage[],
  tools: readonly ChatTool[],
  maxTokens: number,
  signal?: AbortSignal,
): Promise<FixedSummary> {
  const { engine, tokenizer } = summarizer;
  const prompt = blame('template', () =>
    tokenizer.encode(tokenizer.renderChat(request, { tools, addGenerationPrompt: true })),
  );
  if (prompt.length + maxTokens > summarizer.maxModelLen) return UNUSABLE;
  const generation = await engine.generate(
    prompt,
    { maxTokens, temperature: 0, topP: 1, topK: -1, stopTokenIds: tokenizer.eosTokenIds },
    signal,
  );
  const text = tokenizer
    .decode(generation.tokenIds, { skipSpecial: true })
    .replace(/^\s*<think>[\s\S]*?<\/think>/, '')
    .trim();
  const usable = generation.finishReason === 'stop' && text.length > 0;
  return { text: usable ? text : undefined, tokens: generation.tokenIds.length };
}
