import type { GatewayReply } from './gateway-episode.js';

/** Fields every completion and chunk of one reply share. */
export interface ReplyMeta {
  readonly id: string;
  readonly created: number;
  readonly model: string;
}

/** A non-streaming Chat Completions response. */
export function completionBody(reply: GatewayReply, meta: ReplyMeta, logprobs: boolean): Record<string, unknown> {
  return {
    id: meta.id,
    object: 'chat.completion',
    created: meta.created,
    model: meta.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: reply.toolCalls.length > 0 && reply.text === '' ? null : reply.text,
          ...(reply.reasoning ? { reasoning_content: reply.reasoning } : {}),
          ...(reply.toolCalls.length > 0
            ? {
                tool_calls: reply.toolCalls.map((c) => ({
                  id: c.id,
                  type: 'function',
                  function: { name: c.name, arguments: c.arguments },
                })),
              }
            : {}),
        },
        logprobs: logprobs ? logprobsBody(reply) : null,
        finish_reason: reply.finishReason,
      },
    ],
    usage: usage(reply),
  };
}

/**
 * One Server-Sent Event in OpenAI's chunk shape. With `include_usage`, every chunk has a `usage` field:
 * null on all but the last, which has no choice and the usage (as OpenAI documents and sends).
 */
function sseChunk(
  meta: ReplyMeta,
  choice: Record<string, unknown> | null,
  usageField: { usage?: Record<string, number> | null } = {},
): string {
  const body = {
    id: meta.id,
    object: 'chat.completion.chunk',
    created: meta.created,
    model: meta.model,
    choices: choice ? [{ index: 0, logprobs: null, finish_reason: null, ...choice }] : [],
    ...usageField,
  };
  return `data: ${JSON.stringify(body)}\n\n`;
}

/** The first chunk of a streamed reply, sent as soon as the engine is asked: the assistant role. */
export function roleChunk(meta: ReplyMeta, includeUsage: boolean): string {
  return sseChunk(meta, { delta: { role: 'assistant', content: '' } }, includeUsage ? { usage: null } : {});
}

/**
 * The rest of a streamed reply after `roleChunk`, in OpenAI's chunk shape: the reasoning, the text, one
 * chunk per tool call (whole arguments at once), the finish reason, the usage chunk when asked, then
 * `[DONE]`. The logprobs ride on the text chunk, or on the first call's when there is no text.
 */
export function completionChunks(
  reply: GatewayReply,
  meta: ReplyMeta,
  logprobs: boolean,
  includeUsage: boolean,
): string {
  let pendingLogprobs = logprobs ? { logprobs: logprobsBody(reply) } : {};
  const take = (): Record<string, unknown> => {
    const taken = pendingLogprobs;
    pendingLogprobs = {};
    return taken;
  };
  const pending = includeUsage ? { usage: null } : {};
  let out = '';
  if (reply.reasoning) out += sseChunk(meta, { delta: { reasoning_content: reply.reasoning } }, pending);
  if (reply.text) out += sseChunk(meta, { delta: { content: reply.text }, ...take() }, pending);
  for (const [index, call] of reply.toolCalls.entries()) {
    const delta = {
      tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }],
    };
    out += sseChunk(meta, { delta, ...take() }, pending);
  }
  out += sseChunk(meta, { delta: {}, finish_reason: reply.finishReason, ...take() }, pending);
  if (includeUsage) out += sseChunk(meta, null, { usage: usage(reply) });
  return `${out}data: [DONE]\n\n`;
}

/** An error after the stream began, as OpenAI sends one: the official clients raise it from their iterator. */
export function errorChunk(body: Record<string, unknown>): string {
  return `data: ${JSON.stringify(body)}\n\n`;
}

function usage(reply: GatewayReply): Record<string, number> {
  return {
    prompt_tokens: reply.promptTokens,
    completion_tokens: reply.completionTokens,
    total_tokens: reply.promptTokens + reply.completionTokens,
  };
}

/** OpenAI's `logprobs.content`: each token with its bytes and, when `top_logprobs` asked, its alternatives. */
function logprobsBody(reply: GatewayReply): { content: unknown[] } {
  return {
    content: reply.tokens.map((t) => ({
      ...tokenLogprob(t),
      top_logprobs: t.top.map(tokenLogprob),
    })),
  };
}

function tokenLogprob(t: { readonly token: string; readonly logprob: number }): Record<string, unknown> {
  return { token: t.token, logprob: t.logprob, bytes: [...Buffer.from(t.token, 'utf8')] };
}
