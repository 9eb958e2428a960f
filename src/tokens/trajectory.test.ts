import { describe, expect, test } from 'vitest';
import { TokenTrajectory } from './trajectory.js';

function sample(): TokenTrajectory {
  const t = new TokenTrajectory();
  t.appendEnvironment('prompt', [1, 2, 3], 0);
  t.appendModel([10, 11], [-0.5, -0.25], 0, 7, 'stop');
  t.appendEnvironment('tool', [4, 5], 1);
  t.appendModel([12], [-1], 1, 8, 'length');
  t.counters.turns = 2;
  t.counters.toolCalls = 1;
  return t;
}

describe('TokenTrajectory', () => {
  test('returns a mask of 1 exactly on model tokens and logprobs aligned with them', () => {
    const t = sample();
    expect(t.ids).toStrictEqual([1, 2, 3, 10, 11, 4, 5, 12]);
    expect(t.mask()).toStrictEqual([0, 0, 0, 1, 1, 0, 0, 1]);
    expect(t.logprobsFull()).toStrictEqual([null, null, null, -0.5, -0.25, null, null, -1]);
    expect(t.promptLength).toBe(3);
  });

  test('returns the compact JSON form and reads it back', () => {
    const t = sample();
    const json = JSON.parse(JSON.stringify(t));
    expect(json).toStrictEqual({
      format: 'atk.trajectory/1',
      ids: [1, 2, 3, 10, 11, 4, 5, 12],
      segments: [
        ['prompt', 3, 0],
        ['model', 2, 0, 7, 'stop'],
        ['tool', 2, 1],
        ['model', 1, 1, 8, 'length'],
      ],
      logprobs: [-0.5, -0.25, -1],
      counters: { turns: 2, toolCalls: 1, toolErrors: 0, truncations: 0 },
    });
    const back = TokenTrajectory.fromJSON(json);
    expect(back.segments).toStrictEqual(t.segments);
    expect(back.logprobsFull()).toStrictEqual(t.logprobsFull());
    expect(back.counters).toStrictEqual(t.counters);
  });

  test('rejects JSON whose logprobs or ids do not match its segments', () => {
    const json = JSON.parse(JSON.stringify(sample()));
    expect(() => TokenTrajectory.fromJSON({ ...json, logprobs: [-1] })).toThrow(/logprobs/);
    expect(() => TokenTrajectory.fromJSON({ ...json, ids: [...json.ids, 9] })).toThrow(/outnumber/);
    expect(() => TokenTrajectory.fromJSON({ format: 'other' })).toThrow(/not an atk.trajectory/);
  });

  test('returns its token count as length and 0 as promptLength when it is empty or starts with the model', () => {
    const empty = new TokenTrajectory();
    expect(empty.length).toBe(0);
    expect(empty.promptLength).toBe(0);
    const t = new TokenTrajectory();
    t.appendModel([10, 11], [-0.5, -0.25], 0, 1, 'stop');
    t.appendEnvironment('tool', [4], 1);
    expect(t.length).toBe(3);
    expect(t.promptLength).toBe(0);
    expect(sample().length).toBe(8);
  });

  test('returns no segment for an append of no tokens', () => {
    const t = new TokenTrajectory();
    t.appendEnvironment('prompt', [1], 0);
    t.appendEnvironment('tool', [], 0);
    t.appendModel([], [], 0, 1, 'stop');
    expect(t.segments).toStrictEqual([{ source: 'prompt', start: 0, length: 1, turn: 0 }]);
    expect(t.mask()).toStrictEqual([0]);
  });

  test('returns policy version 0 and finish reason stop for a model segment stored without them', () => {
    const back = TokenTrajectory.fromJSON({
      format: 'atk.trajectory/1',
      ids: [1, 10],
      segments: [
        ['prompt', 1, 0],
        ['model', 1, 0],
      ],
      logprobs: [-0.5],
      counters: { turns: 1, toolCalls: 0, toolErrors: 0, truncations: 0 },
    });
    expect(back.segments).toStrictEqual([
      { source: 'prompt', start: 0, length: 1, turn: 0 },
      { source: 'model', start: 1, length: 1, turn: 0, policyVersion: 0, finishReason: 'stop' },
    ]);
  });

  test('rejects JSON that is not a trajectory of this format, each part checked on its own', () => {
    const json = JSON.parse(JSON.stringify(sample()));
    expect(TokenTrajectory.fromJSON(json).length).toBe(8);
    for (const bad of [
      null,
      { ...json, format: 'atk.trajectory/0' },
      { ...json, ids: undefined },
      { ...json, segments: {} },
      { ...json, logprobs: 'none' },
    ]) {
      expect(() => TokenTrajectory.fromJSON(bad)).toThrow('not an atk.trajectory/1 trajectory');
    }
  });

  test('rejects JSON whose segments run past its ids, or whose logprobs outnumber its model tokens', () => {
    const json = JSON.parse(JSON.stringify(sample()));
    expect(() => TokenTrajectory.fromJSON({ ...json, ids: json.ids.slice(0, 7) })).toThrow(
      'trajectory segments are longer than its ids',
    );
    expect(() => TokenTrajectory.fromJSON({ ...json, logprobs: [...json.logprobs, -2] })).toThrow(
      'trajectory ids or logprobs outnumber its segments',
    );
  });

  test('rejects a model segment with a logprob count that differs from its tokens', () => {
    expect(() => new TokenTrajectory().appendModel([1, 2], [-1], 0, 0, 'stop')).toThrow(/2 tokens but 1 logprobs/);
  });
});
