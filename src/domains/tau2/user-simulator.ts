import type { Engine } from '../../engines/types.js';
import { ProviderError } from '../../errors/index.js';
import type { ChatMessage, ModelTokenizer } from '../../tokens/index.js';
import type { TranscriptTurn } from './evaluator.js';

/** Tokens a simulated user writes to end the conversation (any of them is a user stop). */
export const STOP_TOKENS = ['###STOP###', '###TRANSFER###', '###OUT-OF-SCOPE###'] as const;

/** Whether a message ends the conversation. */
export function isStopMessage(text: string): boolean {
  return STOP_TOKENS.some((token) => text.includes(token));
}

/**
 * The customer in a tau2 episode. Given the visible conversation so far (agent and user text,
 * from the agent's side; it starts with the agent's greeting), it writes the user's next message.
 */
export interface UserSimulator {
  respond(conversation: readonly TranscriptTurn[], signal?: AbortSignal): Promise<string>;
}

/** A user that says fixed messages in order, then `###STOP###`: for tests and smoke runs. */
export class ScriptedUser implements UserSimulator {
  constructor(private readonly messages: readonly string[]) {}

  respond(conversation: readonly TranscriptTurn[]): Promise<string> {
    const said = conversation.filter((t) => t.role === 'user').length;
    return Promise.resolve(this.messages[said] ?? STOP_TOKENS[0]);
  }
}

/**
 * The chat the user model sees: its system prompt, then the conversation with roles flipped
 * (the agent's messages are `user` turns, the simulated user's own are `assistant` turns). Agent
 * tool calls are not part of it, as in the reference.
 */
export function userModelMessages(systemPrompt: string, conversation: readonly TranscriptTurn[]): ChatMessage[] {
  return [
    { role: 'system', content: systemPrompt },
    ...conversation
      .filter((t) => t.text.length > 0)
      .map((t): ChatMessage => ({ role: t.role === 'assistant' ? 'user' : 'assistant', content: t.text })),
  ];
}

/** Sampling of the user model (the reference uses temperature 0). */
export interface UserSampling {
  readonly temperature: number;
  readonly maxTokens: number;
}

const DEFAULT_SAMPLING: UserSampling = { temperature: 0, maxTokens: 512 };

/** A user played by any OpenAI-compatible `/v1/chat/completions` server. */
export class ChatUrlUser implements UserSimulator {
  constructor(
    private readonly options: {
      /** Base URL up to and including `/v1`, e.g. http://127.0.0.1:8001/v1. */
      readonly url: string;
      readonly model: string;
      readonly systemPrompt: string;
      readonly apiKey?: string;
      readonly sampling?: UserSampling;
      readonly timeoutMs?: number;
    },
  ) {}

  /** @throws ProviderError on an HTTP error, a timeout or a reply without message content. */
  async respond(conversation: readonly TranscriptTurn[], signal?: AbortSignal): Promise<string> {
    const { url, model, systemPrompt, apiKey, sampling = DEFAULT_SAMPLING, timeoutMs = 120_000 } = this.options;
    const endpoint = `${url.replace(/\/+$/, '')}/chat/completions`;
    const timeout = AbortSignal.timeout(timeoutMs);
    let response: Response;
    try {
      response = await fetch(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
        body: JSON.stringify({
          model,
          messages: userModelMessages(systemPrompt, conversation),
          temperature: sampling.temperature,
          max_tokens: sampling.maxTokens,
        }),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw new ProviderError(
        `user simulator at ${endpoint} unreachable: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
    const body = await response.text();
    if (!response.ok)
      throw new ProviderError(`user simulator at ${endpoint} answered ${response.status}: ${body.slice(0, 300)}`);
    const content = parseContent(body);
    if (content === undefined)
      throw new ProviderError(`user simulator at ${endpoint} sent no message content: ${body.slice(0, 300)}`);
    return content;
  }
}

function parseContent(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { choices?: { message?: { content?: unknown } }[] };
    const content = parsed.choices?.[0]?.message?.content;
    return typeof content === 'string' ? content : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A user played by an atk engine (the policy's own or a second one): the flipped chat is
 * rendered with that model's template and generated token-in/token-out. Its tokens never enter
 * the policy's trajectory; only the decoded text does, as an environment turn.
 */
export class EngineUser implements UserSimulator {
  constructor(
    private readonly options: {
      readonly engine: Engine;
      readonly tokenizer: ModelTokenizer;
      readonly systemPrompt: string;
      readonly sampling?: UserSampling;
      readonly chatTemplateKwargs?: Readonly<Record<string, unknown>>;
    },
  ) {}

  /** @throws ProviderError from the engine. */
  async respond(conversation: readonly TranscriptTurn[], signal?: AbortSignal): Promise<string> {
    const { engine, tokenizer, systemPrompt, sampling = DEFAULT_SAMPLING, chatTemplateKwargs = {} } = this.options;
    const prompt = tokenizer.renderChat(userModelMessages(systemPrompt, conversation), {
      ...chatTemplateKwargs,
      addGenerationPrompt: true,
    });
    const generation = await engine.generate(
      tokenizer.encode(prompt),
      {
        maxTokens: sampling.maxTokens,
        temperature: sampling.temperature,
        topP: 1,
        topK: -1,
        stopTokenIds: tokenizer.eosTokenIds,
      },
      signal,
    );
    return tokenizer.decode(generation.tokenIds, { skipSpecial: true }).trim();
  }
}
