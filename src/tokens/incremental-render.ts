import type { ChatMessage, ChatTool } from './chat-types.js';
import type { ModelTokenizer } from './model-tokenizer.js';

/**
 * Renders a conversation in pieces so that the model's own tokens are never re-rendered: the first
 * piece is the whole prompt, every later piece is only what the environment adds after the model's
 * last token (end of its turn, the new tool results or user message, the next generation prompt).
 */
export interface IncrementalRenderer {
  /** Ids of system prompt + tools + first messages + generation prompt. */
  initial(messages: readonly ChatMessage[], tools: readonly ChatTool[]): number[];
  /**
   * Ids to append after a model turn that ended with `lastModelToken`: the template's turn closer
   * (minus the stop token when the model already produced it), the new messages, the generation prompt.
   * @throws Error when the template cannot be rendered append-only (see `probeTemplate`).
   */
  continuation(lastModelToken: number | undefined, messages: readonly ChatMessage[]): number[];
}

const FAKE_SYSTEM: ChatMessage = { role: 'system', content: '__ATK_SYSTEM__' };
const FAKE_USER: ChatMessage = { role: 'user', content: '__ATK_USER__' };
const FAKE_ASSISTANT = '__ATK_MODEL__';

const renderers = new WeakMap<ModelTokenizer, Map<string, IncrementalRenderer>>();

/**
 * The renderer for a tokenizer and template variables (`enable_thinking` ...), probed once and shared.
 * @throws Error when the template's turn structure cannot be found (no separator after an assistant turn).
 */
export function incrementalRenderer(
  tokenizer: ModelTokenizer,
  kwargs: Readonly<Record<string, unknown>> = {},
): IncrementalRenderer {
  let byKwargs = renderers.get(tokenizer);
  if (!byKwargs) renderers.set(tokenizer, (byKwargs = new Map()));
  const key = JSON.stringify(kwargs);
  let renderer = byKwargs.get(key);
  if (!renderer) byKwargs.set(key, (renderer = createRenderer(tokenizer, kwargs)));
  return renderer;
}

/** What the probe learns about a template: how an assistant turn is closed, and the fixed prefix to subtract. */
export interface TemplateProbe {
  /** Text the template writes right after an assistant message's content, e.g. `<|im_end|>\n`. */
  readonly turnCloser: string;
  /** `turnCloser` minus its first token when that token is what the model stops on, e.g. `\n`. */
  readonly closerAfterStop: string;
  /** The token that `closerAfterStop` assumes the model ended with. */
  readonly stopToken: number | undefined;
  /** Rendering of the fake system + user prefix, subtracted from every continuation render. */
  readonly prefix: string;
}

/**
 * Finds the turn closer by rendering a fake assistant message, and the prefix that continuation renders
 * start with. Templates differ here (`<|im_end|>\n`, `<|eot_id|>`, a blank line after assistant turns only).
 * @throws Error when the template does not echo assistant content.
 */
export function probeTemplate(tokenizer: ModelTokenizer, kwargs: Readonly<Record<string, unknown>>): TemplateProbe {
  const rendered = tokenizer.renderChat(
    [FAKE_SYSTEM, FAKE_USER, { role: 'assistant', content: FAKE_ASSISTANT }],
    kwargs,
  );
  const at = rendered.lastIndexOf(FAKE_ASSISTANT);
  if (at < 0) throw new Error('chat template probe: the template does not render assistant content');
  const turnCloser = rendered.slice(at + FAKE_ASSISTANT.length);
  const closerIds = tokenizer.encode(turnCloser);
  const first = closerIds[0];
  const firstText = first === undefined ? '' : tokenizer.decode([first]);
  const stopsOnFirst = first !== undefined && tokenizer.eosTokenIds.includes(first) && turnCloser.startsWith(firstText);
  return {
    turnCloser,
    closerAfterStop: stopsOnFirst ? turnCloser.slice(firstText.length) : turnCloser,
    stopToken: stopsOnFirst ? first : undefined,
    prefix: tokenizer.renderChat([FAKE_SYSTEM, FAKE_USER], kwargs),
  };
}

function createRenderer(tokenizer: ModelTokenizer, kwargs: Readonly<Record<string, unknown>>): IncrementalRenderer {
  const probe = probeTemplate(tokenizer, kwargs);
  return {
    initial(messages, tools) {
      return tokenizer.encode(tokenizer.renderChat(messages, { ...kwargs, tools, addGenerationPrompt: true }));
    },
    continuation(lastModelToken, messages) {
      // A fake system + user prefix keeps templates from injecting a default system prompt or
      // mis-rendering a conversation that starts with tool messages; it is cut off again below.
      const full = tokenizer.renderChat([FAKE_SYSTEM, FAKE_USER, ...messages], {
        ...kwargs,
        addGenerationPrompt: true,
      });
      if (!full.startsWith(probe.prefix)) {
        throw new Error(
          'chat template renders earlier messages differently when more follow; incremental rendering is impossible',
        );
      }
      const closer =
        probe.stopToken !== undefined && lastModelToken === probe.stopToken ? probe.closerAfterStop : probe.turnCloser;
      return tokenizer.encode(closer + full.slice(probe.prefix.length));
    },
  };
}
