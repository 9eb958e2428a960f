import { describe, expect, test } from 'vitest';
import { stepMetricsAt } from '../__fixtures__/run-events.js';
import { formatEvent } from './progress-lines.js';

describe('formatEvent', () => {
  test("returns a step's line with dynamic sampling's kept groups and rounds and the curriculum's skips when they are on", () => {
    const metrics = stepMetricsAt(3, {
      'dynamic_sampling/groups_sampled': 7,
      'dynamic_sampling/groups_kept': 4,
      'dynamic_sampling/rounds': 2,
      'dynamic_sampling/ran_out': 0,
      'curriculum/skipped_solved': 3,
      'curriculum/skipped_unsolved': 1,
    });
    expect(formatEvent({ type: 'stepFinished', step: 3, metrics })).toMatch(
      /dropped 1\/4 {2}step 0\.6s {2}kept 4\/7 groups in 2 round\(s\) {2}skipped 3 solved 1 unsolved$/,
    );
    expect(formatEvent({ type: 'stepFinished', step: 3, metrics: stepMetricsAt(3) })).toMatch(/step 0\.6s$/);
  });

  test("returns a supervised step's loss and token accuracy, not the references' reward", () => {
    const metrics = stepMetricsAt(2, { 'train/loss': 0.4321, 'train/token_accuracy': 0.875 });
    expect(formatEvent({ type: 'stepFinished', step: 2, metrics })).toMatch(
      /^step {4}2 {2}loss 0\.432 {2}token acc 87\.5% {2}gen/,
    );
    expect(formatEvent({ type: 'stepFinished', step: 2, metrics: stepMetricsAt(2) })).toMatch(/^step {4}2 {2}reward /);
  });
});
