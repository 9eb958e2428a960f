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
   * `reply` is the model's last reply as the conversation holds it: where it made tool calls the new
   * messages are rendered after it, for templates that name a tool result after the call it answers
   * (gpt-oss writes `functions.NAME to=assistant`); its own rendering is cut off again.
   * @throws Error when the template cannot be rendered append-only (see `probeTemplate`).
   */
  continuation(lastModelToken: number | undefined, messages: readonly ChatMessage[], reply?: ChatMessage): number[];
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
  const systemBlocks = new Map<string, SystemBlock | null>();
  return {
    initial(messages, tools) {
      const text = tokenizer.renderChat(messages, { ...kwargs, tools, addGenerationPrompt: true });
      const first = messages[0];
      if (first?.role !== 'system') return tokenizer.encode(text);
      // Every episode of a run starts with the same system prompt and tools, often the longest text of
      // the prompt (tool schemas run to thousands of tokens): its tokens are reused, only the rest is encoded.
      const key = `${first.content}\u0000${JSON.stringify(tools)}`;
      let block = systemBlocks.get(key);
      if (block === undefined) {
        block = systemBlock(tokenizer, text, () => tokenizer.renderChat([first], { ...kwargs, tools }));
        if (systemBlocks.size >= MAX_SYSTEM_BLOCKS) systemBlocks.clear();
        systemBlocks.set(key, block);
      }
      if (block && text.startsWith(block.text)) {
        const rest = tokenizer.encode(text.slice(block.text.length));
        if (rest[0] === block.nextId) return block.ids.concat(rest);
      }
      return tokenizer.encode(text);
    },
    continuation(lastModelToken, messages, reply) {
      // A fake system + user prefix keeps templates from injecting a default system prompt or
      // mis-rendering a conversation that starts with tool messages; it is cut off again below.
      const head = [FAKE_SYSTEM, FAKE_USER];
      const stop = stopText(tokenizer, lastModelToken);
      if (reply?.tool_calls?.length && stop) {
        // After the reply, cut off again where the template writes the model's stop token after it.
        const full = tokenizer.renderChat([...head, reply, ...messages], { ...kwargs, addGenerationPrompt: true });
        const at = full.startsWith(probe.prefix) ? full.indexOf(stop, probe.prefix.length) : -1;
        if (at >= 0) return tokenizer.encode(full.slice(at + stop.length));
      }
      const full = tokenizer.renderChat([...head, ...messages], { ...kwargs, addGenerationPrompt: true });
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

/** The text of the model's last token where it is a stop token, else undefined. */
function stopText(tokenizer: ModelTokenizer, lastModelToken: number | undefined): string | undefined {
  if (lastModelToken === undefined || !tokenizer.eosTokenIds.includes(lastModelToken)) return undefined;
  return tokenizer.decode([lastModelToken]) || undefined;
}

/** A rendered system block (system prompt + tools) and its tokens, reusable at the start of a prompt. */
interface SystemBlock {
  readonly text: string;
  readonly ids: readonly number[];
  /** The special token that follows the block where it was checked; reuse needs the same one. */
  readonly nextId: number;
}

const MAX_SYSTEM_BLOCKS = 64;

/**
 * The system block of `prompt`, or null when its tokens cannot be reused. Reuse is exact only where
 * the block ends right before a special token: tokenizers split text at special tokens before
 * anything else, so what comes before one never changes how what follows is encoded, and the reverse.
 * Checked once on the first prompt by encoding it both ways (a special token that strips the space
 * before it, say, fails the check).
 */
function systemBlock(tokenizer: ModelTokenizer, prompt: string, render: () => string): SystemBlock | null {
  let blockText: string;
  try {
    blockText = render();
  } catch {
    return null; // templates that insist on a user turn
  }
  if (!blockText || !prompt.startsWith(blockText)) return null;
  const ids = tokenizer.encode(blockText);
  const rest = tokenizer.encode(prompt.slice(blockText.length));
  const nextId = rest[0];
  if (nextId === undefined || !tokenizer.specialTokenIds.has(nextId)) return null;
  const whole = tokenizer.encode(prompt);
  const same =
    whole.length === ids.length + rest.length &&
    whole.every((id, i) => id === (i < ids.length ? ids[i] : rest[i - ids.length]));
  return same ? { text: blockText, ids, nextId } : null;
}
