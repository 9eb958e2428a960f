import { z } from 'zod';
import type { ChatMessage, ChatTool, ChatToolCall } from '../tokens/chat-types.js';
import { badRequest } from './errors.js';

/** Text or parts; only text parts can be rendered by a chat template. */
const Content = z.union([z.string(), z.array(z.looseObject({ type: z.string() })), z.null()]).optional();

const RequestMessage = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
  content: Content,
  name: z.string().optional(),
  tool_call_id: z.string().optional(),
  reasoning_content: z.string().nullable().optional(),
  tool_calls: z
    .array(
      z.looseObject({
        id: z.string().optional(),
        type: z.literal('function').optional(),
        function: z.looseObject({
          name: z.string(),
          arguments: z.union([z.string(), z.record(z.string(), z.unknown())]),
        }),
      }),
    )
    .nullable()
    .optional(),
});

const RequestTool = z.looseObject({
  type: z.literal('function'),
  function: z.looseObject({
    name: z.string().min(1),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
  }),
});

/**
 * The Chat Completions request fields atk reads. Unknown fields (`user`, `metadata`, penalties the
 * engine does not apply...) are accepted and ignored, as OpenAI-compatible servers do, so clients that
 * always send them still work.
 */
export const ChatCompletionRequest = z.looseObject({
  model: z.string().optional(),
  messages: z.array(RequestMessage).min(1),
  tools: z.array(RequestTool).nullable().optional(),
  tool_choice: z
    .union([z.string(), z.looseObject({ type: z.string() })])
    .nullable()
    .optional(),
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().gt(0).max(1).nullable().optional(),
  max_tokens: z.number().int().positive().nullable().optional(),
  max_completion_tokens: z.number().int().positive().nullable().optional(),
  stop: z
    .union([z.string(), z.array(z.string()).max(4)])
    .nullable()
    .optional(),
  n: z.number().int().positive().nullable().optional(),
  logprobs: z.boolean().nullable().optional(),
  top_logprobs: z.number().int().min(0).max(20).nullable().optional(),
  stream: z.boolean().nullable().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  seed: z.number().int().nullable().optional(),
  parallel_tool_calls: z.boolean().nullable().optional(),
});
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>;

/** A request in the form the episode renders: chat-template messages and tools, and what to sample. */
export interface ParsedCompletionRequest {
  readonly messages: ChatMessage[];
  readonly tools: ChatTool[];
  /** `tool_choice: none`: tools stay in the prompt (so it renders like every other turn) but no call is parsed. */
  readonly parseToolCalls: boolean;
  /** `parallel_tool_calls: false`: at most one call goes back (the first), as OpenAI and vLLM return. */
  readonly parallelToolCalls: boolean;
  readonly temperature?: number;
  readonly topP?: number;
  readonly maxTokens?: number;
  readonly stop: readonly string[];
  readonly logprobs: boolean;
  /** Most likely alternatives to return per token (`top_logprobs`, 0-20; needs `logprobs`). */
  readonly topLogprobs: number;
  readonly stream: boolean;
  readonly includeUsage: boolean;
  readonly seed?: number;
}

/**
 * Validates a Chat Completions body and turns it into chat-template messages.
 * @throws GatewayError (400) naming the field: a malformed body, `n` > 1, a non-text content part,
 * tool-call arguments that are not a JSON object, a `tool_choice` other than auto or none, a
 * `tool_choice` other than none without tools.
 */
export function parseCompletionRequest(body: unknown): ParsedCompletionRequest {
  const parsed = ChatCompletionRequest.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw badRequest(issue.path.join('.') || 'body', issue.message);
  }
  const request = parsed.data;
  if ((request.n ?? 1) !== 1)
    throw badRequest('n', `only n = 1 is supported (got ${request.n}); send one request per sample`);
  // As vLLM: a tool_choice other than none needs tools to choose from (OpenAI refuses it too).
  if (request.tool_choice != null && request.tool_choice !== 'none' && !request.tools?.length)
    throw badRequest('tool_choice', 'When using `tool_choice`, `tools` must be set.');
  const choice = request.tool_choice ?? 'auto';
  if (choice !== 'auto' && choice !== 'none') {
    throw badRequest(
      'tool_choice',
      `only "auto" and "none" are supported (got ${JSON.stringify(choice)}): the model chooses its calls itself`,
    );
  }
  const topLogprobs = request.top_logprobs ?? 0;
  if (topLogprobs > 0 && request.logprobs !== true)
    throw badRequest('top_logprobs', 'needs logprobs: true (as OpenAI requires)');
  const maxTokens = request.max_completion_tokens ?? request.max_tokens ?? undefined;
  return {
    messages: request.messages.map((m, i) => chatMessage(m, i)),
    tools: (request.tools ?? []).map((t) => ({
      type: 'function',
      function: {
        name: t.function.name,
        description: t.function.description ?? '',
        parameters: t.function.parameters ?? { type: 'object', properties: {} },
      },
    })),
    parseToolCalls: choice === 'auto',
    parallelToolCalls: request.parallel_tool_calls !== false,
    ...(request.temperature == null ? {} : { temperature: request.temperature }),
    ...(request.top_p == null ? {} : { topP: request.top_p }),
    ...(maxTokens === undefined ? {} : { maxTokens }),
    stop: request.stop == null ? [] : typeof request.stop === 'string' ? [request.stop] : request.stop,
    logprobs: request.logprobs === true,
    topLogprobs,
    stream: request.stream === true,
    includeUsage: request.stream_options?.include_usage === true,
    ...(request.seed == null ? {} : { seed: request.seed }),
  };
}

function chatMessage(m: z.infer<typeof RequestMessage>, i: number): ChatMessage {
  const role = m.role === 'developer' ? 'system' : m.role;
  const content = contentText(m.content, `messages.${i}.content`);
  if (role === 'tool')
    return {
      role,
      content,
      ...(m.tool_call_id ? { tool_call_id: m.tool_call_id } : {}),
      ...(m.name ? { name: m.name } : {}),
    };
  if (role !== 'assistant') return { role, content };
  const calls = (m.tool_calls ?? []).map(
    (call, j): ChatToolCall => ({
      ...(call.id ? { id: call.id } : {}),
      type: 'function',
      function: {
        name: call.function.name,
        arguments: callArguments(call.function.arguments, `messages.${i}.tool_calls.${j}.function.arguments`),
      },
    }),
  );
  return {
    role,
    content,
    ...(m.reasoning_content ? { reasoning_content: m.reasoning_content } : {}),
    ...(calls.length ? { tool_calls: calls } : {}),
  };
}

function contentText(content: z.infer<typeof Content>, param: string): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content
    .map((part, j) => {
      if (part.type === 'text' && typeof part.text === 'string') return part.text;
      throw badRequest(
        `${param}.${j}`,
        `a '${part.type}' part cannot be rendered by the model's chat template; send text parts only`,
        'unsupported_content',
      );
    })
    .join('');
}

/** Templates `tojson` arguments, so they must be an object; OpenAI clients send them as a JSON string. */
function callArguments(value: string | Record<string, unknown>, param: string): Record<string, unknown> {
  if (typeof value !== 'string') return value;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value === '' ? '{}' : value);
  } catch {
    throw badRequest(param, 'is not valid JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw badRequest(param, 'must be a JSON object');
  return parsed as Record<string, unknown>;
}
