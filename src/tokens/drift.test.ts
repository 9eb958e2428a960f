import { describe, expect, test } from 'vitest';
import { QWEN3_TOKENIZER_DIR, TINY_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import type { ChatMessage } from './chat-types.js';
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
): TokenTrajectory {
  const r = incrementalRenderer(tok, kwargs);
  const t = new TokenTrajectory();
  t.appendEnvironment('prompt', r.initial(first, []), 0);
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
