import { describe, expect, test } from 'vitest';
import { evalSummaryOf } from '../__fixtures__/run-events.js';
import { evalFigures } from './eval-table.js';
import { formatEvalSummary } from './progress-lines.js';

const multiTurn = {
  ...evalSummaryOf('step-00006', 0.5),
  user_turns_per_episode: 2.5,
  policy_violations_per_episode: 0.25,
};

describe('multi-turn figures in the eval line and table', () => {
  test('returns user turns and violations per episode after the turns, only for a run that has them', () => {
    expect(formatEvalSummary(multiTurn)).toContain('turns 2.00  user turns 2.50  violations/ep 0.25');
    expect(formatEvalSummary(evalSummaryOf('step-00006', 0.5))).not.toContain('user turns');
  });

  test("returns rows for them in atk eval's table after the turns", () => {
    const figures = evalFigures(multiTurn);
    const at = figures.findIndex(([, , key]) => key === 'turns');
    expect(figures.slice(at + 1, at + 3)).toStrictEqual([
      ['user turns / episode', 2.5, 'user_turns'],
      ['policy violations / episode', 0.25, 'policy_violations'],
    ]);
    expect(evalFigures(evalSummaryOf('step-00006', 0.5)).some(([, , key]) => key === 'user_turns')).toBe(false);
  });
});
