import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Template } from '@huggingface/jinja';
import { Tokenizer } from '@huggingface/tokenizers';
import { InputError } from '../errors/index.js';
import type { ChatMessage, ChatTool } from './chat-types.js';

/** Options of one chat-template render; any other key is passed to the template (e.g. `enable_thinking`). */
export interface RenderChatOptions {
  readonly tools?: readonly ChatTool[];
  readonly addGenerationPrompt?: boolean;
  readonly [templateVariable: string]: unknown;
}

/**
 * A model's tokenizer and chat template, loaded once and shared by every episode (a Qwen tokenizer
 * costs ~70 MB of heap). All methods are synchronous and pure.
 */
export interface ModelTokenizer {
  /** Directory tokenizer.json was read from. */
  readonly dir: string;
  /** Tokens that end a model turn: generation_config.json `eos_token_id` plus tokenizer_config `eos_token`. */
  readonly eosTokenIds: readonly number[];
  /** Ids of tokens flagged `special` (dropped by `decode(..., {skipSpecial: true})`). */
  readonly specialTokenIds: ReadonlySet<number>;
  /**
   * Every added token (special or not, e.g. Qwen's `<tool_call>`) by its text: the tokens encoding never
   * splits, which the tool-call parsers' markers are matched as (`parseReply`).
   */
  readonly addedTokens: ReadonlyMap<string, number>;
  /** The chat template's Jinja source by name (`default`, and `tool_use` where the model has one). */
  readonly chatTemplates: Readonly<Record<string, string>>;
  /** sha256 of tokenizer.json and of the chat template, for run manifests. */
  readonly hashes: { readonly tokenizer: string; readonly chatTemplate: string };
  /** Text to ids; special tokens written in the text (`<|im_start|>`) become their single ids; no BOS is added. */
  encode(text: string): number[];
  decode(ids: readonly number[], options?: { readonly skipSpecial?: boolean }): string;
  tokenToId(token: string): number | undefined;
  /** Renders messages with the model's own Jinja chat template. @throws Error when the template raises. */
  renderChat(messages: readonly ChatMessage[], options?: RenderChatOptions): string;
}

/** Where to find the tokenizer and template when they are not the model directory's own. */
export interface TokenizerOverrides {
  /** Directory holding tokenizer.json / tokenizer_config.json instead of the model directory. */
  readonly tokenizerDir?: string;
  /** Jinja file that replaces the tokenizer_config.json chat template. */
  readonly chatTemplatePath?: string;
  /** Jinja text that replaces the chat template (wins over `chatTemplatePath`). */
  readonly chatTemplate?: string;
}

const cache = new Map<string, Promise<ModelTokenizer>>();

/**
 * Loads `tokenizer.json`, `tokenizer_config.json` (chat template, special tokens) and, when present,
 * `generation_config.json` (eos ids) from a local Hugging Face model directory. Loads are memoised per
 * directory and overrides, so concurrent callers share one instance.
 * @throws InputError when a file is missing or unreadable, or the chat template does not parse.
 */
export function loadModelTokenizer(modelDir: string, overrides: TokenizerOverrides = {}): Promise<ModelTokenizer> {
  const key = JSON.stringify([
    resolve(modelDir),
    overrides.tokenizerDir,
    overrides.chatTemplatePath,
    overrides.chatTemplate,
  ]);
  let loading = cache.get(key);
  if (!loading) {
    loading = load(modelDir, overrides);
    cache.set(key, loading);
    loading.catch(() => cache.delete(key));
  }
  return loading;
}

type TokenizerConfig = Record<string, unknown> & { chat_template?: unknown };

async function load(modelDir: string, overrides: TokenizerOverrides): Promise<ModelTokenizer> {
  const dir = resolve(overrides.tokenizerDir ?? modelDir);
  const tokenizerText = await readRequired(join(dir, 'tokenizer.json'));
  const tokenizerJson = parseJson(tokenizerText, join(dir, 'tokenizer.json')) as Record<string, unknown>;
  const config = parseJson(
    await readRequired(join(dir, 'tokenizer_config.json')),
    join(dir, 'tokenizer_config.json'),
  ) as TokenizerConfig;
  const generation = await readOptional(join(resolve(modelDir), 'generation_config.json'));
  const templateSource =
    overrides.chatTemplate ??
    (overrides.chatTemplatePath ? await readRequired(overrides.chatTemplatePath) : await defaultTemplates(dir, config));
  const templates = compileTemplates(templateSource, overrides.chatTemplatePath ?? join(dir, 'tokenizer_config.json'));

  const tokenizer = new Tokenizer(tokenizerJson, config);
  const specialTokenIds = new Set<number>();
  const addedTokens = new Map<string, number>();
  for (const token of (tokenizerJson.added_tokens ?? []) as { id: number; content: string; special?: boolean }[]) {
    if (token.special) specialTokenIds.add(token.id);
    addedTokens.set(token.content, token.id);
  }
  const tokenString = (value: unknown): string | undefined =>
    typeof value === 'string'
      ? value
      : typeof (value as { content?: unknown })?.content === 'string'
        ? (value as { content: string }).content
        : undefined;
  const eosTokenIds = eosIds(
    generation === undefined ? undefined : parseJson(generation, 'generation_config.json'),
    tokenizer.token_to_id(tokenString(config.eos_token) ?? ''),
  );
  const specialVariables = {
    bos_token: tokenString(config.bos_token) ?? '',
    eos_token: tokenString(config.eos_token) ?? '',
    pad_token: tokenString(config.pad_token) ?? '',
    unk_token: tokenString(config.unk_token) ?? '',
  };
  const sha = (text: string): string => createHash('sha256').update(text).digest('hex');

  return {
    dir,
    eosTokenIds,
    specialTokenIds,
    addedTokens,
    chatTemplates: Object.fromEntries(templateEntries(templateSource).map((t) => [t.name, t.template])),
    hashes: { tokenizer: sha(tokenizerText), chatTemplate: sha(JSON.stringify(templateSource)) },
    encode: (text) => tokenizer.encode(text, { add_special_tokens: false }).ids,
    decode: (ids, options = {}) =>
      ids.length === 0 ? '' : tokenizer.decode(ids as number[], { skip_special_tokens: options.skipSpecial ?? false }),
    tokenToId: (token) => tokenizer.token_to_id(token),
    renderChat(messages, options = {}) {
      const { tools, addGenerationPrompt, ...kwargs } = options;
      const template =
        tools && tools.length > 0 ? (templates.get('tool_use') ?? templates.get('default')) : templates.get('default');
      if (!template) throw new Error('the chat template has no default entry');
      return template.render({
        ...specialVariables,
        ...kwargs,
        messages,
        ...(tools && tools.length > 0 ? { tools } : {}),
        add_generation_prompt: addGenerationPrompt ?? false,
      });
    },
  };
}

/** tokenizer_config.json `chat_template` (a string, or a list of {name, template}), else a `chat_template.jinja` file. */
async function defaultTemplates(
  dir: string,
  config: TokenizerConfig,
): Promise<string | { name: string; template: string }[]> {
  const template = config.chat_template;
  if (typeof template === 'string') return template;
  if (Array.isArray(template)) return template as { name: string; template: string }[];
  const file = await readOptional(join(dir, 'chat_template.jinja'));
  if (file !== undefined) return file;
  throw new InputError(`${join(dir, 'tokenizer_config.json')}: no chat_template`, {
    hint: 'use an instruct model, or set model.chat_template to a Jinja file',
  });
}

function templateEntries(source: string | { name: string; template: string }[]): { name: string; template: string }[] {
  return typeof source === 'string' ? [{ name: 'default', template: source }] : source;
}

function compileTemplates(
  source: string | { name: string; template: string }[],
  origin: string,
): Map<string, Template> {
  const entries = templateEntries(source);
  const compiled = new Map<string, Template>();
  for (const { name, template } of entries) {
    try {
      compiled.set(name, new Template(template));
    } catch (error) {
      throw new InputError(`${origin}: chat template '${name}' does not parse: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
  return compiled;
}

function eosIds(generationConfig: unknown, configEos: number | undefined): number[] {
  const ids = new Set<number>();
  const fromGeneration = (generationConfig as { eos_token_id?: unknown } | undefined)?.eos_token_id;
  for (const id of Array.isArray(fromGeneration) ? fromGeneration : [fromGeneration]) {
    if (typeof id === 'number') ids.add(id);
  }
  if (configEos !== undefined) ids.add(configEos);
  return [...ids];
}

async function readRequired(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new InputError(`cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, {
      hint: 'point model.path (or model.tokenizer) at a local Hugging Face model directory',
      cause: error,
    });
  }
}

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
}

function parseJson(text: string, path: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InputError(`${path} is not valid JSON: ${(error as Error).message}`, { cause: error });
  }
}
