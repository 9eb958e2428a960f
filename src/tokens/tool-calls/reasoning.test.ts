import { describe, expect, test } from 'vitest';
import { type ReasoningMarkers, splitReasoning, THINK } from './reasoning.js';

/** Hermes' markers: a call is `<tool_call>` JSON `</tool_call>`. */
const TAGGED: ReasoningMarkers = {
  ...THINK,
  call: {
    open: '<tool_call>',
    close: '</tool_call>',
    isCall: (body) => {
      try {
        JSON.parse(body);
        return true;
      } catch {
        return false;
      }
    },
  },
};

describe('splitReasoning', () => {
  test('returns the text as it is when it holds no reasoning', () => {
    expect(splitReasoning('The answer is 5.')).toStrictEqual({ reasoning: '', rest: 'The answer is 5.' });
  });

  test('returns reasoning whose <think> was in the prompt, and an empty one closed at the start', () => {
    expect(splitReasoning('add them first\n</think>\n\nIt is 5.')).toStrictEqual({
      reasoning: 'add them first',
      rest: '\n\nIt is 5.',
    });
    expect(splitReasoning('</think>\n\nIt is 5.')).toStrictEqual({ reasoning: '', rest: '\n\nIt is 5.' });
  });

  test('returns a block left open by the length limit as reasoning, trimmed, after leading white space', () => {
    expect(splitReasoning('\n<think>\nadd them first\n')).toStrictEqual({ reasoning: 'add them first', rest: '' });
  });

  test('returns no reasoning for a reply that starts with a call holding </think> in its arguments', () => {
    const text = '<tool_call>{"name": "f", "arguments": {"s": "</think>"}}</tool_call>';
    expect(splitReasoning(text, TAGGED)).toStrictEqual({ reasoning: '', rest: text });
    expect(splitReasoning(`<think>plan</think>${text}`, TAGGED)).toStrictEqual({ reasoning: 'plan', rest: text });
  });

  test('ends reasoning at a </think> quoted where no <tool_call> opened a call', () => {
    expect(splitReasoning('Plan: use {"s": "</think>"}</tool_call>', TAGGED)).toStrictEqual({
      reasoning: 'Plan: use {"s": "',
      rest: '"}</tool_call>',
    });
    expect(splitReasoning('Plan: use {"s": "</think>"}.', TAGGED)).toStrictEqual({
      reasoning: 'Plan: use {"s": "',
      rest: '"}.',
    });
  });

  test('ends reasoning at the </think> after a call written inside it', () => {
    expect(splitReasoning('<think>plan <tool_call>{}</tool_call> then</think>ok', TAGGED)).toStrictEqual({
      reasoning: 'plan <tool_call>{}</tool_call> then',
      rest: 'ok',
    });
  });

  test('ends reasoning at a </think> after a mentioned <tool_call> whose text up to the next </tool_call> is no call', () => {
    const call = '<tool_call>{"name": "f", "arguments": {}}</tool_call>';
    expect(splitReasoning(`<think>I could write <tool_call> here</think>${call}`, TAGGED)).toStrictEqual({
      reasoning: 'I could write <tool_call> here',
      rest: call,
    });
  });
});
