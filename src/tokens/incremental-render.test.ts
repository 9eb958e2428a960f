import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { QWEN3_TOKENIZER_DIR, TINY_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import { loadGptOss } from '../__fixtures__/tool-call-families.js';
import type { ChatMessage, ChatTool } from './chat-types.js';
import { type IncrementalRenderer, incrementalRenderer, probeTemplate } from './incremental-render.js';
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

  test('returns one renderer per tokenizer and template variables, shared by later calls', async () => {
    const tok = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    // The same tokenizer files as another tokenizer object (loadModelTokenizer returns one per directory).
    const other: ModelTokenizer = { ...tok };
    const r = incrementalRenderer(tok, { enable_thinking: false });
    expect(incrementalRenderer(tok, { enable_thinking: false })).toBe(r);
    expect(incrementalRenderer(tok, { enable_thinking: true })).not.toBe(r);
    expect(incrementalRenderer(other, { enable_thinking: false })).not.toBe(r);
    expect(incrementalRenderer(tok)).toBe(incrementalRenderer(tok, {}));
  });

  test('returns the same continuation with a reply that made no tool calls as without a reply', async () => {
    const tok = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    const r = incrementalRenderer(tok);
    const cont = r.continuation(302, results, { role: 'assistant', content: 'Let me see.' });
    expect(cont).toStrictEqual(r.continuation(302, results));
    expect(tok.decode(cont).startsWith('\n<|im_start|>user\n<tool_response>')).toBe(true);
  });

  test('returns the whole turn closer after a tool-call reply when the template does not write the stop token the model ended with', async () => {
    const tok = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    // The model stopped on <|endoftext|> (300), an eos token; the template closes the turn with <|im_end|>.
    const cont = incrementalRenderer(tok).continuation(300, results, assistant);
    expect(tok.decode(cont)).toBe(
      '<|im_end|>\n<|im_start|>user\n<tool_response>\n{"sum": 5}\n</tool_response>\n<tool_response>\ndone\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
    );
  });

  test('returns the whole turn closer after a tool-call reply that was cut off before its stop token', async () => {
    const tok = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    // Truncated inside the call: its last token is text that the rendered reply also holds.
    const last = tok.encode('<tool_call>\n{"name"').at(-1);
    expect(tok.eosTokenIds).not.toContain(last);
    const cont = incrementalRenderer(tok).continuation(last, results, assistant);
    expect(tok.decode(cont)).toBe(
      '<|im_end|>\n<|im_start|>user\n<tool_response>\n{"sum": 5}\n</tool_response>\n<tool_response>\ndone\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
    );
  });

  test('returns what follows the stop token after a tool-call reply rendered at the very start', async () => {
    // System and user messages render as nothing, so the reply's stop token is the render's first text; the
    // tool result names the message before it, which is the reply only when the reply is rendered.
    const base = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    const tok = await loadModelTokenizer(base.dir, {
      chatTemplate:
        "{%- for m in messages %}{%- if m.role == 'assistant' %}{{ m.content + '<|im_end|>' }}" +
        "{%- elif m.role == 'tool' %}{{ '<|im_start|>after ' + messages[loop.index0 - 1].role + '<|im_end|>' }}{%- endif %}" +
        "{%- endfor %}{%- if add_generation_prompt %}{{ '<|im_start|>' }}{%- endif %}",
    });
    expect(probeTemplate(tok, {})).toStrictEqual({
      turnCloser: '<|im_end|>',
      closerAfterStop: '',
      stopToken: 302,
      prefix: '',
    });
    const cont = incrementalRenderer(tok).continuation(302, [results[0]], assistant);
    expect(tok.decode(cont)).toBe('<|im_start|>after assistant<|im_end|><|im_start|>');
  });

  test('rejects a template that renders earlier messages differently, also after a tool-call reply', async () => {
    const base = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    const tok = await loadModelTokenizer(base.dir, {
      chatTemplate: "{{ messages|length }}{% for m in messages %}{{ m.content + '<|im_end|>\\n' }}{% endfor %}",
    });
    expect(() => incrementalRenderer(tok).continuation(302, results, assistant)).toThrow(
      /incremental rendering is impossible/,
    );
  });

  test('returns the generation prompt alone for a conversation of no messages', async () => {
    const base = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    const tok = await loadModelTokenizer(base.dir, { chatTemplate: plainTemplate });
    expect(incrementalRenderer(tok).initial([], [])).toStrictEqual(tok.encode('<|im_start|>assistant\n'));
  });

  test('encodes a prompt that starts without a system message once, as a whole', async () => {
    const tok = countingEncodes(await loadModelTokenizer(TINY_TOKENIZER_DIR));
    const r = incrementalRenderer(tok);
    for (const content of ['What is 2+3?', 'What is 4+5?']) {
      const cost = initialCost(tok, r, [{ role: 'user', content }], tools);
      expect(cost.encoded).toBe(cost.length);
    }
  });

  test('reuses the tokens of a system block for its own system prompt and tools only', async () => {
    const tok = countingEncodes(await loadModelTokenizer(TINY_TOKENIZER_DIR));
    const r = incrementalRenderer(tok);
    const a: ChatMessage = { role: 'system', content: 'You add numbers carefully. '.repeat(10) };
    const b: ChatMessage = { role: 'system', content: 'You multiply numbers carefully. '.repeat(10) };
    const costs = (
      [
        [a, tools],
        [b, tools],
        [b, tools],
        [a, tools],
        [a, []],
        [a, []],
      ] as const
    ).map(([sys, t], i) => initialCost(tok, r, [sys, { role: 'user', content: `What is ${i}+3?` }], t));
    // Checking a new block encodes the prompt twice and the block once; reusing one encodes what follows it.
    expect(costs.map((c) => c.encoded > c.length)).toStrictEqual([true, true, false, false, true, false]);
    for (const i of [2, 3, 5]) expect(costs[i].encoded).toBeLessThan(costs[i].length / 4);
  });

  test('keeps the system blocks of at most 64 system prompts, forgetting them all when a 65th comes', async () => {
    const tok = countingEncodes(await loadModelTokenizer(TINY_TOKENIZER_DIR));
    const r = incrementalRenderer(tok);
    const prompt = (i: number): ChatMessage[] => [
      { role: 'system', content: `You are adder number ${i}.` },
      { role: 'user', content: 'What is 2+3?' },
    ];
    const reused = (i: number): boolean => {
      const cost = initialCost(tok, r, prompt(i), []);
      return cost.encoded < cost.length;
    };
    for (let i = 0; i < 64; i++) expect(reused(i)).toBe(false);
    expect(reused(0)).toBe(true);
    expect(reused(63)).toBe(true);
    expect(reused(64)).toBe(false);
    expect(reused(1)).toBe(false);
    expect(reused(64)).toBe(true);
  });

  test('encodes the whole prompt once when its system message renders as nothing or differently alone', async () => {
    const base = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    for (const chatTemplate of [
      // The system message alone renders as nothing.
      "{%- for m in messages %}{%- if m.role != 'system' %}{{ '<|im_start|>' + m.content }}{%- endif %}{%- endfor %}",
      // The system message alone renders as `1<|im_start|>...`, a prefix of no longer conversation.
      "{{ messages|length }}{%- for m in messages %}{{ '<|im_start|>' + m.content }}{%- endfor %}",
    ]) {
      const tok = countingEncodes(await loadModelTokenizer(base.dir, { chatTemplate }));
      const r = incrementalRenderer(tok);
      for (const content of ['What is 2+3?', 'What is 4+5?']) {
        const cost = initialCost(tok, r, [system, { role: 'user', content }], []);
        expect(cost.encoded).toBe(cost.length);
      }
    }
  });

  test('encodes the whole prompt for a template that raises on a system message alone', async () => {
    const base = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    const tok = await loadModelTokenizer(base.dir, {
      chatTemplate: `{%- if messages|length < 2 %}{{ raise_exception('a user message is required') }}{%- endif %}${plainTemplate}`,
    });
    const messages = [system, user];
    expect(incrementalRenderer(tok).initial(messages, [])).toStrictEqual(
      tok.encode(tok.renderChat(messages, { addGenerationPrompt: true })),
    );
  });

  test('encodes the whole prompt where its system block is followed by text, not the special token it was checked with', async () => {
    const base = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    const tok = await loadModelTokenizer(base.dir, { chatTemplate: plainTemplate });
    const r = incrementalRenderer(tok);
    const sys: ChatMessage = { role: 'system', content: 'See t' };
    const first = [sys, { role: 'user' as const, content: 'Why?' }];
    const second = [sys, { role: 'assistant' as const, content: 'he end' }];
    // ' the' is one merged token: the block's ' t' and the rest's 'he' do not add up to it.
    expect(tok.encode('See the end')).not.toStrictEqual([...tok.encode('See t'), ...tok.encode('he end')]);
    for (const messages of [first, second]) {
      expect(r.initial(messages, [])).toStrictEqual(
        tok.encode(tok.renderChat(messages, { addGenerationPrompt: true })),
      );
    }
  });

  test('encodes the whole prompt where its system block ends before text, however it was encoded the first time', async () => {
    const base = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    const tok = await loadModelTokenizer(base.dir, { chatTemplate: plainTemplate });
    const r = incrementalRenderer(tok);
    const sys: ChatMessage = { role: 'system', content: 'You add.' };
    // Both rests start with the token `'`; the first splits off cleanly after the block, the second does not.
    expect(tok.encode("You add.'Hi'")).toStrictEqual([...tok.encode('You add.'), ...tok.encode("'Hi'")]);
    expect(tok.encode("You add.'st'")).not.toStrictEqual([...tok.encode('You add.'), ...tok.encode("'st'")]);
    expect(tok.encode("'st'")[0]).toBe(tok.encode("'Hi'")[0]);
    for (const content of ["'Hi'", "'st'"]) {
      const messages = [sys, { role: 'assistant' as const, content }];
      expect(r.initial(messages, [])).toStrictEqual(
        tok.encode(tok.renderChat(messages, { addGenerationPrompt: true })),
      );
    }
  });

  test('encodes the whole prompt when a special token would strip a newline merged into the system block', async () => {
    // Qwen3 encodes `.\n` as one token; with lstrip, `<|im_start|>` eats the newline, leaving `.` in its
    // place: the same number of tokens, not the same tokens.
    const dir = mkdtempSync(join(tmpdir(), 'atk-lstrip-qwen3-'));
    try {
      cpSync(QWEN3_TOKENIZER_DIR, dir, { recursive: true });
      const json = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8'));
      for (const token of json.added_tokens) if (token.content === '<|im_start|>') token.lstrip = true;
      writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(json));
      const tok = await loadModelTokenizer(dir, {
        chatTemplate:
          "{%- for m in messages %}{%- if m.role == 'system' %}{{ m.content + '\\n' }}" +
          "{%- else %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- endif %}{%- endfor %}" +
          "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}",
      });
      const r = incrementalRenderer(tok);
      const sys: ChatMessage = { role: 'system', content: 'You add.' };
      for (const content of ['What is 2+3?', 'What is 4+5?']) {
        const messages = [sys, { role: 'user' as const, content }];
        const text = tok.renderChat(messages, { addGenerationPrompt: true });
        const rest = tok.encode(text.slice('You add.\n'.length));
        expect(tok.encode(text).length).toBe(tok.encode('You add.\n').length + rest.length);
        expect(r.initial(messages, [])).toStrictEqual(tok.encode(text));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('probeTemplate', () => {
  test('returns an empty closer and no stop token for a template that writes nothing after assistant content', async () => {
    const base = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    const tok = await loadModelTokenizer(base.dir, {
      chatTemplate: '{%- for m in messages %}{{ m.content }}{%- endfor %}',
    });
    expect(probeTemplate(tok, {})).toStrictEqual({
      turnCloser: '',
      closerAfterStop: '',
      stopToken: undefined,
      prefix: '__ATK_SYSTEM____ATK_USER__',
    });
  });

  test('returns the whole closer and no stop token where the closer does not start with a stop token', async () => {
    const base = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    const tok = await loadModelTokenizer(base.dir, {
      chatTemplate: "{%- for m in messages %}{{ '<|im_start|>' + m.content + '\\n<|im_end|>' }}{%- endfor %}",
    });
    expect(probeTemplate(tok, {})).toStrictEqual({
      turnCloser: '\n<|im_end|>',
      closerAfterStop: '\n<|im_end|>',
      stopToken: undefined,
      prefix: '<|im_start|>__ATK_SYSTEM__\n<|im_end|><|im_start|>__ATK_USER__\n<|im_end|>',
    });
    // A model that stopped on <|im_end|> gets the whole closer after it.
    expect(tok.decode(incrementalRenderer(tok).continuation(302, [user]))).toBe(
      '\n<|im_end|><|im_start|>What is 2+3?\n<|im_end|>',
    );
  });

  test('rejects a template that does not render assistant content', async () => {
    const base = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    const tok = await loadModelTokenizer(base.dir, {
      chatTemplate: "{%- for m in messages %}{%- if m.role != 'assistant' %}{{ m.content }}{%- endif %}{%- endfor %}",
    });
    expect(() => probeTemplate(tok, {})).toThrow('chat template probe: the template does not render assistant content');
  });
});

/** A template with no system block of its own: messages one after another, each user turn after `<|im_start|>`. */
const plainTemplate =
  "{%- for m in messages %}{%- if m.role == 'user' %}{{ '<|im_start|>' }}{%- endif %}{{ m.content }}{%- endfor %}" +
  "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}";

/**
 * Renders `messages` as a prompt and returns how many characters `r.initial` encoded for it and the
 * prompt's length, checking that its ids are those of encoding the whole prompt.
 */
function initialCost(
  tok: ModelTokenizer & { encodedChars: number },
  r: IncrementalRenderer,
  messages: readonly ChatMessage[],
  promptTools: readonly ChatTool[],
): { encoded: number; length: number } {
  const text = tok.renderChat(messages, { tools: promptTools, addGenerationPrompt: true });
  tok.encodedChars = 0;
  const ids = r.initial(messages, promptTools);
  const encoded = tok.encodedChars;
  expect(ids).toStrictEqual(tok.encode(text));
  return { encoded, length: text.length };
}

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
