import { describe, expect, test } from 'vitest';
import { QWEN3_TOKENIZER_DIR, TINY_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import type { ChatMessage, ChatTool } from './chat-types.js';
import { auditDrift } from './drift.js';
import { incrementalRenderer } from './incremental-render.js';
import { loadModelTokenizer, type ModelTokenizer } from './model-tokenizer.js';
import { TokenTrajectory } from './trajectory.js';

/** Builds a trajectory the way the provider does: initial render, then model ids and continuations. */
function build(
  tok: ModelTokenizer,
  first: ChatMessage[],
  turns: { model: number[]; then?: ChatMessage[] }[],
  kwargs = {},
  tools: ChatTool[] = [],
): TokenTrajectory {
  const r = incrementalRenderer(tok, kwargs);
  const t = new TokenTrajectory();
  t.appendEnvironment('prompt', r.initial(first, tools), 0);
  turns.forEach((turn, i) => {
    t.appendModel(
      turn.model,
      turn.model.map(() => -0.1),
      i,
      0,
      'stop',
    );
    if (turn.then) t.appendEnvironment('user', r.continuation(turn.model.at(-1), turn.then), i + 1);
  });
  return t;
}

describe('auditDrift', () => {
  test('returns identical when the model wrote exactly what the template renders', async () => {
    const tok = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    const user: ChatMessage = { role: 'user', content: 'Hi' };
    const t = build(tok, [user], [{ model: tok.encode('Hello there.<|im_end|>') }]);
    const report = auditDrift({
      tokenizer: tok,
      trajectory: t,
      messages: [user, { role: 'assistant', content: 'Hello there.' }],
      tools: [],
    });
    expect(report).toMatchObject({ identical: true, firstDivergence: null, changedModelTokens: 0, hunkCount: 0 });
  });

  test('returns a planted non-canonical BPE split and re-serialised tool-call JSON as hunks', async () => {
    const tok = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    const user: ChatMessage = { role: 'user', content: 'Hi' };
    // ' the' is one merged token (258); the model sampled it as four byte tokens instead.
    const split = [...' the'].map((c) => c.charCodeAt(0));
    const model = [
      ...tok.encode('See'),
      ...split,
      ...tok.encode('.\n<tool_call>\n{"name": "add", "arguments": {"a":2}}\n</tool_call><|im_end|>'),
    ];
    const t = build(tok, [user], [{ model }]);
    const assistant: ChatMessage = {
      role: 'assistant',
      content: 'See the.',
      tool_calls: [{ type: 'function', function: { name: 'add', arguments: { a: 2 } } }],
    };
    const report = auditDrift({ tokenizer: tok, trajectory: t, messages: [user, assistant], tools: [] });
    expect(report.identical).toBe(false);
    expect(report.hunkCount).toBe(2);
    expect(report.hunks.map((h) => [h.trajectory.text, h.rerendered.text])).toStrictEqual([
      [' the', ' the'],
      ['', ' '],
    ]);
    expect(report.hunks[0].modelTokens).toBe(4);
    expect(report.firstDivergence).toBe(t.promptLength + tok.encode('See').length);
    const first = auditDrift({ tokenizer: tok, trajectory: t, messages: [user, assistant], tools: [], maxHunks: 1 });
    expect(first).toStrictEqual({ ...report, hunks: report.hunks.slice(0, 1) });
  });

  test('returns identical for a conversation rendered with tools and template variables', async () => {
    // The turn separator is a template variable, and the tools are listed in a system block.
    const template =
      "{%- if tools %}{{ '<|im_start|>system\\n' }}{%- for t in tools %}{{ t.function.name + ';' }}{%- endfor %}{{ '<|im_end|>\\n' }}{%- endif %}" +
      "{%- for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>' + separator }}{%- endfor %}" +
      "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}";
    const base = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    const tok = await loadModelTokenizer(base.dir, { chatTemplate: template });
    const kwargs = { separator: '\n\n' };
    const tools: ChatTool[] = [
      { type: 'function', function: { name: 'add', description: 'Add', parameters: { type: 'object' } } },
    ];
    const user: ChatMessage = { role: 'user', content: 'Hi' };
    const t = build(tok, [user], [{ model: tok.encode('Hello there.<|im_end|>') }], kwargs, tools);
    expect(tok.decode(t.ids)).toBe(
      '<|im_start|>system\nadd;<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n\n<|im_start|>assistant\nHello there.<|im_end|>',
    );
    const messages: ChatMessage[] = [user, { role: 'assistant', content: 'Hello there.' }];
    const report = auditDrift({ tokenizer: tok, trajectory: t, messages, tools, chatTemplateKwargs: kwargs });
    expect(report).toMatchObject({ identical: true, firstDivergence: null, hunkCount: 0 });
    expect(report.rerenderedTokens).toBe(t.length + tok.encode('\n\n').length);
  });

  test('returns identical for a trajectory cut off before the stop token, compared with the whole turn closer', async () => {
    const tok = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    const user: ChatMessage = { role: 'user', content: 'Hi' };
    // Truncated at the length limit: the model never wrote <|im_end|>, the template writes it.
    const t = build(tok, [user], [{ model: tok.encode('Hello there.') }]);
    const report = auditDrift({
      tokenizer: tok,
      trajectory: t,
      messages: [user, { role: 'assistant', content: 'Hello there.' }],
      tools: [],
    });
    expect(report).toMatchObject({ identical: true, hunkCount: 0, trajectoryTokens: t.length });
    expect(report.rerenderedTokens).toBe(t.length + tok.encode('<|im_end|>\n').length);
  });

  test('returns the earlier <think> block that the Qwen3 template strips on re-render', async () => {
    const tok = await loadModelTokenizer(QWEN3_TOKENIZER_DIR);
    const q1: ChatMessage = { role: 'user', content: 'What is 2+3?' };
    const q2: ChatMessage = { role: 'user', content: 'And 3+4?' };
    const t = build(
      tok,
      [q1],
      [
        // biome-ignore lint/suspicious/noThenProperty: a scripted turn, never awaited
        { model: tok.encode('<think>\nadd them\n</think>\n\n5<|im_end|>'), then: [q2] },
        { model: tok.encode('<think>\nagain\n</think>\n\n7<|im_end|>') },
      ],
    );
    const messages: ChatMessage[] = [
      q1,
      { role: 'assistant', content: '5', reasoning_content: 'add them' },
      q2,
      { role: 'assistant', content: '7', reasoning_content: 'again' },
    ];
    const report = auditDrift({ tokenizer: tok, trajectory: t, messages, tools: [] });
    expect(report.hunkCount).toBe(1);
    expect(report.hunks[0].trajectory.text).toBe('<think>\nadd them\n</think>\n\n');
    expect(report.hunks[0].rerendered.text).toBe('');
    expect(report.changedModelTokens).toBe(tok.encode('<think>\nadd them\n</think>\n\n').length);
  });
});
