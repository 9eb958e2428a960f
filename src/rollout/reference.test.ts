import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadModelTokenizer, type ChatMessage, type ChatTool } from '../tokens/index.js';
import { referenceTrajectory } from './reference.js';

const fixture = join(import.meta.dirname, '..', '__fixtures__', 'tiny-tokenizer');
const calculator: ChatTool = {
  type: 'function',
  function: {
    name: 'calculator',
    description: 'Evaluate',
    parameters: { type: 'object', properties: { expression: { type: 'string' } } },
  },
};
const conversation: ChatMessage[] = [
  { role: 'user', content: 'What is 12 + 30?' },
  {
    role: 'assistant',
    content: '',
    tool_calls: [{ type: 'function', function: { name: 'calculator', arguments: { expression: '12 + 30' } } }],
  },
  { role: 'tool', content: '42' },
  { role: 'assistant', content: 'Answer: 42' },
];

describe('referenceTrajectory', () => {
  it('returns tokens that decode to the template rendering, with the mask on assistant turns only', async () => {
    const tokenizer = await loadModelTokenizer(fixture);
    const trajectory = referenceTrajectory(tokenizer, conversation, [calculator]);
    expect(tokenizer.decode(trajectory.ids)).toBe(
      tokenizer.renderChat(conversation, { tools: [calculator] }).trimEnd(),
    );
    const mask = trajectory.mask();
    const model = trajectory.ids.filter((_, i) => mask[i] === 1);
    const text = tokenizer.decode(model);
    expect(text).toContain('<tool_call>');
    expect(text).toContain('Answer: 42');
    expect(text).not.toContain('<tool_response>');
    expect(trajectory.segments.map((s) => s.source)).toStrictEqual(['prompt', 'model', 'tool', 'model']);
    expect(trajectory.counters.turns).toBe(2);
  });

  it('rejects a conversation that starts with the assistant', async () => {
    const tokenizer = await loadModelTokenizer(fixture);
    expect(() => referenceTrajectory(tokenizer, conversation.slice(1), [])).toThrow('prompt messages');
  });
});
