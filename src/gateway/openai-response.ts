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
 * The same reply as Server-Sent Events in OpenAI's chunk shape: the role, the text, one chunk per tool
 * call (whole arguments at once), the finish reason, the usage chunk when asked, then `[DONE]`. The
 * engine answers in one piece, so the chunks are written together.
 */
export function completionChunks(
  reply: GatewayReply,
  meta: ReplyMeta,
  logprobs: boolean,
  includeUsage: boolean,
): string {
  const chunk = (
    delta: Record<string, unknown>,
    finishReason: string | null,
    extra: Record<string, unknown> = {},
  ): string =>
    `data: ${JSON.stringify({ id: meta.id, object: 'chat.completion.chunk', created: meta.created, model: meta.model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason, ...extra }] })}\n\n`;
  let out = chunk({ role: 'assistant', content: '' }, null);
  if (reply.reasoning) out += chunk({ reasoning_content: reply.reasoning }, null);
  if (reply.text) out += chunk({ content: reply.text }, null, logprobs ? { logprobs: logprobsBody(reply) } : {});
  for (const [index, call] of reply.toolCalls.entries()) {
    out += chunk(
      {
        tool_calls: [
          { index, id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } },
        ],
      },
      null,
    );
  }
  out += chunk({}, reply.finishReason);
  if (includeUsage)
    out += `data: ${JSON.stringify({ id: meta.id, object: 'chat.completion.chunk', created: meta.created, model: meta.model, choices: [], usage: usage(reply) })}\n\n`;
  return `${out}data: [DONE]\n\n`;
}

function usage(reply: GatewayReply): Record<string, number> {
  return {
    prompt_tokens: reply.promptTokens,
    completion_tokens: reply.completionTokens,
    total_tokens: reply.promptTokens + reply.completionTokens,
  };
}

/** The engine reports the sampled token's logprob only, so `top_logprobs` lists are empty. */
function logprobsBody(reply: GatewayReply): { content: unknown[] } {
  return {
    content: reply.tokens.map((t) => ({
      token: t.token,
      logprob: t.logprob,
      bytes: [...Buffer.from(t.token, 'utf8')],
      top_logprobs: [],
    })),
  };
}
