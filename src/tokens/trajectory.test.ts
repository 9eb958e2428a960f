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

  test('rejects a model segment with a logprob count that differs from its tokens', () => {
    expect(() => new TokenTrajectory().appendModel([1, 2], [-1], 0, 0, 'stop')).toThrow(/2 tokens but 1 logprobs/);
  });
});
