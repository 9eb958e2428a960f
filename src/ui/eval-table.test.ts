import { describe, expect, test } from 'vitest';
import { evalSummaryOf } from '../__fixtures__/run-events.js';
import { evalFigures } from './eval-table.js';

describe('evalFigures', () => {
  test('returns a row per failure kind after failed episodes, keyed failed/<kind>', () => {
    const summary = { ...evalSummaryOf('step-00010', 0.5), failed_episodes: 3, 'failed/tool': 1, 'failed/engine': 2 };
    const figures = evalFigures(summary);
    const at = figures.findIndex(([, , key]) => key === 'failed_episodes');
    expect(figures.slice(at)).toStrictEqual([
      ['failed episodes', 3, 'failed_episodes'],
      ['  failed: engine', 2, 'failed/engine'],
      ['  failed: tool', 1, 'failed/tool'],
    ]);
  });

  test('returns no failure-kind rows when no episode failed', () => {
    expect(
      evalFigures(evalSummaryOf('step-00010', 0.5)).filter(([, , key]) => key.startsWith('failed/')),
    ).toStrictEqual([]);
  });
});
