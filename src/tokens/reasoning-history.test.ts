import { beforeAll, describe, expect, test } from 'vitest';
import { QWEN3_TOKENIZER_DIR, TINY_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import { loadModelTokenizer, type ModelTokenizer } from './model-tokenizer.js';
import { detectReasoningHistory, resolveReasoningHistory } from './reasoning-history.js';

// A DeepSeek-R1-style template: it renders the reasoning of the turns after the last user message only,
// unless `preserve_thinking` is set, and it raises, as strict templates do, unless the roles alternate
// user/assistant from a user message and every message has content.
const strictStripping =
  '{%- set ns = namespace(last=-1) %}' +
  "{%- for m in messages %}{%- if m.role == 'user' %}{%- set ns.last = loop.index0 %}{%- endif %}{%- endfor %}" +
  '{%- for m in messages %}' +
  "{%- if (loop.index0 % 2 == 0 and m.role != 'user') or (loop.index0 % 2 == 1 and m.role != 'assistant') %}" +
  "{{ raise_exception('roles must alternate user/assistant') }}{%- endif %}" +
  "{%- if not m.content %}{{ raise_exception('every message needs content') }}{%- endif %}" +
  "{{ '<|im_start|>' + m.role + '\\n' }}" +
  "{%- if m.role == 'assistant' and m.reasoning_content and (preserve_thinking or loop.index0 > ns.last) %}" +
  "{{ '<think>' + m.reasoning_content + '</think>' }}{%- endif %}" +
  "{{ m.content + '<|im_end|>\\n' }}" +
  '{%- endfor %}';

let qwen3: ModelTokenizer;
let tiny: ModelTokenizer;
let strict: ModelTokenizer;
let raising: ModelTokenizer;

beforeAll(async () => {
  qwen3 = await loadModelTokenizer(QWEN3_TOKENIZER_DIR);
  tiny = await loadModelTokenizer(TINY_TOKENIZER_DIR);
  strict = await loadModelTokenizer(TINY_TOKENIZER_DIR, { chatTemplate: strictStripping });
  raising = await loadModelTokenizer(TINY_TOKENIZER_DIR, { chatTemplate: "{{ raise_exception('no chat here') }}" });
});

describe('detectReasoningHistory', () => {
  test("returns strip for Qwen3's template, which drops the reasoning of a turn before the last user message", () => {
    expect(detectReasoningHistory(qwen3)).toBe('strip');
    expect(detectReasoningHistory(qwen3, { enable_thinking: true })).toBe('strip');
  });

  test('returns strip for a strict template that rejects any conversation but alternating turns with content', () => {
    expect(detectReasoningHistory(strict)).toBe('strip');
  });

  test('returns keep for a template that keeps every turn’s reasoning (read with the template variables)', () => {
    expect(detectReasoningHistory(strict, { preserve_thinking: true })).toBe('keep');
  });

  test('returns keep for a template that renders no reasoning at all', () => {
    expect(detectReasoningHistory(tiny)).toBe('keep');
  });

  test('returns keep for a template that raises on the conversation', () => {
    expect(detectReasoningHistory(raising)).toBe('keep');
  });
});

describe('resolveReasoningHistory', () => {
  test('returns keep or strip as set, whatever the template does', () => {
    expect(resolveReasoningHistory('keep', qwen3)).toBe('keep');
    expect(resolveReasoningHistory('strip', tiny)).toBe('strip');
  });

  test('returns what the template does for auto', () => {
    expect(resolveReasoningHistory('auto', qwen3)).toBe('strip');
    expect(resolveReasoningHistory('auto', tiny)).toBe('keep');
    expect(resolveReasoningHistory('auto', strict, { preserve_thinking: true })).toBe('keep');
  });
});
