import { describe, expect, test } from 'vitest';
import type { TrajectoryRecord } from '../trajectory/record.js';
import { ToolUseCounter } from './tool-use.js';

/** An episode that called `names` in turn; calls of a name other than the calculator got the guard's error. */
function episode(names: readonly string[]): TrajectoryRecord {
  const messages = names.flatMap((name, i) => [
    { role: 'assistant', content: [{ toolUse: { name, toolUseId: `c${i}`, input: {} } }] },
    {
      role: 'user',
      content: [
        {
          toolResult: {
            toolUseId: `c${i}`,
            status: name === 'calculator' ? 'success' : 'error',
            content: [
              { text: name === 'calculator' ? '4' : `Error: unknown tool '${name}'; available tools: calculator` },
            ],
          },
        },
      ],
    },
  ]);
  const known = names.filter((n) => n === 'calculator').length;
  return {
    step: 1,
    group: 0,
    sample: 0,
    task_id: 't',
    policy_version: 0,
    reward: 0,
    reward_parts: {},
    success: false,
    advantage: null,
    failed: false,
    finish_reason: 'endTurn',
    messages,
    trajectory: null,
    stats: {
      turns: names.length + 1,
      toolCalls: names.length,
      toolErrors: names.length - known,
      userTurns: 1,
      toolErrorsByKind: names.length - known ? { unknown_tool: names.length - known } : {},
      toolCallsByTool: known ? { calculator: known } : {},
      toolErrorsByTool: {},
      truncated: false,
      promptTokens: 10,
      generatedTokens: 10,
      wallMs: 1,
      engineMs: 1,
    },
  };
}

describe('ToolUseCounter', () => {
  test('returns calls of tools the agent does not have as one row, with the most called names as examples', () => {
    const counter = new ToolUseCounter();
    // What a small model does: the real tool, then invented names, most of them called once.
    counter.add(episode(['calculator', 'calculator\uFFFD', '794']));
    counter.add(episode(['calculator', 'calc', 'calc']));
    counter.add(episode(['calculator']));
    for (const name of ['a1', 'a2', 'a3', 'a4']) counter.add(episode([name]));
    const stats = counter.stats();
    expect(stats.tools).toStrictEqual([{ name: 'calculator', calls: 3, episodeShare: 3 / 7, errors: 0 }]);
    expect(stats.unknownTools).toStrictEqual({
      name: 'tools the agent does not have',
      calls: 8,
      episodeShare: 6 / 7,
      errors: 8,
      names: 7,
      examples: [
        { name: 'calc', calls: 2 },
        { name: '794', calls: 1 },
        { name: 'a1', calls: 1 },
        { name: 'a2', calls: 1 },
        { name: 'a3', calls: 1 },
      ],
    });
    expect(stats.errors).toStrictEqual([{ kind: 'unknown_tool', count: 8, rate: 8 / 11 }]);
  });

  test("returns every name as the agent's when the episodes record no tools of their own (sft references)", () => {
    const counter = new ToolUseCounter();
    const reference = {
      ...episode([]),
      messages: [{ role: 'assistant', content: [{ toolUse: { name: 'search', toolUseId: 'x', input: {} } }] }],
    };
    counter.add(reference);
    expect([counter.stats().tools.map((t) => t.name), counter.stats().unknownTools]).toStrictEqual([['search'], null]);
  });
});
