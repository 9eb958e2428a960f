import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { QWEN3_TOKENIZER_DIR, TINY_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import { loadGptOss } from '../__fixtures__/tool-call-families.js';
import type { ChatMessage } from './chat-types.js';
import { incrementalRenderer, probeTemplate } from './incremental-render.js';
import { loadModelTokenizer, type ModelTokenizer } from './model-tokenizer.js';

const tools = [
  {
    type: 'function' as const,
    function: { name: 'add', description: 'Add', parameters: { type: 'object', properties: {} } },
  },
];
const call = { type: 'function' as const, function: { name: 'add', arguments: { a: 2, b: 3 } } };
const system: ChatMessage = { role: 'system', content: 'You add.' };
const user: ChatMessage = { role: 'user', content: 'What is 2+3?' };
const assistant: ChatMessage = { role: 'assistant', content: '', tool_calls: [call] };
const results: ChatMessage[] = [
  { role: 'tool', content: '{"sum": 5}' },
  { role: 'tool', content: 'done' },
];
const callText = '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call><|im_end|>';

describe('incrementalRenderer', () => {
  test('returns initial + model turn + continuation equal to the full render (Qwen3)', async () => {
    const tok = await loadModelTokenizer(QWEN3_TOKENIZER_DIR);
    const kwargs = { enable_thinking: false };
    const r = incrementalRenderer(tok, kwargs);
    // What the model generates after `<think>\n\n</think>\n\n`: the template renders the same text for the call.
    const modelIds = tok.encode(callText);
    const pieces = [...r.initial([system, user], tools), ...modelIds, ...r.continuation(modelIds.at(-1), results)];
    const full = tok.renderChat([system, user, assistant, ...results], { ...kwargs, tools, addGenerationPrompt: true });
    // Qwen3 drops the empty think block of an earlier assistant turn on re-render; the model did see it.
    const seen = full.replace(
      '<|im_start|>assistant\n<tool_call>',
      '<|im_start|>assistant\n<think>\n\n</think>\n\n<tool_call>',
    );
    expect(seen).not.toBe(full);
    expect(pieces).toStrictEqual(tok.encode(seen));
  });

  test('returns the continuation as closer tail, tool responses and generation prompt (tiny)', async () => {
    const tok = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    const r = incrementalRenderer(tok);
    const cont = r.continuation(302, results);
    expect(tok.decode(cont)).toBe(
      '\n<|im_start|>user\n<tool_response>\n{"sum": 5}\n</tool_response>\n<tool_response>\ndone\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
    );
    const modelIds = tok.encode(callText);
    const pieces = [...r.initial([system, user], tools), ...modelIds, ...cont];
    expect(pieces).toStrictEqual(
      tok.encode(tok.renderChat([system, user, assistant, ...results], { tools, addGenerationPrompt: true })),
    );
  });

  test("returns a tool result named after the reply's call for a template that looks back at it (gpt-oss)", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atk-gptoss-'));
    try {
      const tok = await loadGptOss(dir);
      const r = incrementalRenderer(tok);
      // The call as the harmony template writes it, ended by <|call|>, one of gpt-oss's stop tokens.
      const modelIds = tok.encode(' to=functions.add<|channel|>commentary json<|message|>{"a": 2, "b": 3}<|call|>');
      const result: ChatMessage = { role: 'tool', content: '{"sum": 5}' };
      const cont = r.continuation(modelIds.at(-1), [result], assistant);
      expect(tok.decode(cont)).toBe(
        '<|start|>functions.add to=assistant<|channel|>commentary<|message|>"{\\"sum\\": 5}"<|end|><|start|>assistant',
      );
      const pieces = [...r.initial([system, user], tools), ...modelIds, ...cont];
      expect(pieces).toStrictEqual(
        tok.encode(tok.renderChat([system, user, assistant, result], { tools, addGenerationPrompt: true })),
      );
      // Without the reply the template has no call to name the result after.
      expect(() => r.continuation(modelIds.at(-1), [result])).toThrow(/null/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('returns the whole turn closer when the model stopped on another eos token', async () => {
    const tok = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    const cont = incrementalRenderer(tok).continuation(300, [{ role: 'user', content: 'more' }]);
    expect(tok.decode(cont)).toBe('<|im_end|>\n<|im_start|>user\nmore<|im_end|>\n<|im_start|>assistant\n');
  });

  test('returns continuations for a template whose separator differs after assistant turns', async () => {
    const base = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    const template =
      "{%- for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>' }}" +
      "{%- if m.role == 'assistant' %}{{ '\\n\\n' }}{% else %}{{ '\\n' }}{% endif %}{%- endfor %}" +
      "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
    const tok = await loadModelTokenizer(base.dir, { chatTemplate: template });
    expect(probeTemplate(tok, {})).toMatchObject({
      turnCloser: '<|im_end|>\n\n',
      closerAfterStop: '\n\n',
      stopToken: 302,
    });
    const r = incrementalRenderer(tok);
    const answer = tok.encode('Sure.<|im_end|>');
    const next: ChatMessage = { role: 'user', content: 'Again?' };
    const pieces = [...r.initial([user], []), ...answer, ...r.continuation(302, [next])];
    const full = tok.encode(
      tok.renderChat([user, { role: 'assistant', content: 'Sure.' }, next], { addGenerationPrompt: true }),
    );
    expect(pieces).toStrictEqual(full);
  });

  test('rejects a template that renders earlier messages differently when more follow', async () => {
    const base = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    const tok = await loadModelTokenizer(base.dir, {
      chatTemplate: "{{ messages|length }}{% for m in messages %}{{ m.content + '<|im_end|>\\n' }}{% endfor %}",
    });
    expect(() => incrementalRenderer(tok).continuation(302, [user])).toThrow(/incremental rendering is impossible/);
  });

  test('reuses the tokens of a system block across prompts, each equal to encoding the whole prompt', async () => {
    for (const dir of [QWEN3_TOKENIZER_DIR, TINY_TOKENIZER_DIR]) {
      const tok = countingEncodes(await loadModelTokenizer(dir));
      const r = incrementalRenderer(tok, { enable_thinking: false });
      const longSystem: ChatMessage = { role: 'system', content: 'You add numbers carefully. '.repeat(40) };
      for (const [i, sys] of [longSystem, longSystem, system, longSystem].entries()) {
        const messages = [sys, { role: 'user' as const, content: `What is ${i}+3?` }];
        const text = tok.renderChat(messages, { enable_thinking: false, tools, addGenerationPrompt: true });
        tok.encodedChars = 0;
        expect(r.initial(messages, tools)).toStrictEqual(tok.encode(text));
        // The second prompt with the long block encodes only what follows the block.
        if (i === 1) expect(tok.encodedChars - text.length).toBeLessThan(text.length / 4);
      }
    }
  });

  test('encodes the whole prompt when a special token would strip the space before it', async () => {
    // With lstrip, `<|im_start|>` eats the newline that ends the system block: encoded apart, that
    // newline would stay. The check on the first prompt catches it.
    const dir = mkdtempSync(join(tmpdir(), 'atk-lstrip-'));
    cpSync(TINY_TOKENIZER_DIR, dir, { recursive: true });
    const json = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8'));
    for (const token of json.added_tokens) if (token.content === '<|im_start|>') token.lstrip = true;
    writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(json));
    const tok = await loadModelTokenizer(dir);
    const r = incrementalRenderer(tok);
    for (const content of ['What is 2+3?', 'What is 4+5?']) {
      const messages = [system, { role: 'user' as const, content }];
      expect(r.initial(messages, tools)).toStrictEqual(
        tok.encode(tok.renderChat(messages, { tools, addGenerationPrompt: true })),
      );
    }
  });
});

/** `tok`, counting the characters it is asked to encode. */
function countingEncodes(tok: ModelTokenizer): ModelTokenizer & { encodedChars: number } {
  const counting = {
    ...tok,
    encodedChars: 0,
    encode(text: string): number[] {
      counting.encodedChars += text.length;
      return tok.encode(text);
    },
  };
  return counting;
}
