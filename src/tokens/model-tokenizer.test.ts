import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { InputError } from '../errors/index.js';
import { QWEN3_TOKENIZER_DIR, TINY_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import { loadModelTokenizer } from './model-tokenizer.js';

const addTool = {
  type: 'function' as const,
  function: {
    name: 'add',
    description: 'Add two numbers',
    parameters: { type: 'object', properties: { a: { type: 'number' } }, required: ['a'] },
  },
};

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
    const dir = mkdtempSync(join(tmpdir(), 'atk-tok-'));
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
});
