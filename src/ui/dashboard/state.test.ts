import { describe, expect, test } from 'vitest';
import { evalSummaryOf, stepMetricsAt, syntheticRun } from '../../__fixtures__/run-events.js';
import type { RunEvent } from '../../run/events.js';
import { formatEvent } from '../progress-lines.js';
import { formatSeconds, progressBar, sparkline } from './glyphs.js';
import { etaSeconds, initialDashboard, progressFraction, reduceDashboard, type DashboardState } from './state.js';

function fold(events: readonly RunEvent[], start = 0, msEach = 1000): DashboardState {
  return events.reduce((s, e, i) => reduceDashboard(s, e, start + i * msEach), initialDashboard());
}

describe('reduceDashboard', () => {
  test('returns the figures of a whole run: steps, curves, evals, dropped groups, the last warnings', () => {
    const events = syntheticRun(4);
    const warnings: RunEvent[] = ['a', 'b', 'c', 'd'].map((m) => ({ type: 'warning', message: m }));
    const state = fold([...events.slice(0, -1), ...warnings, events.at(-1)!]);
    expect(state.stepsDone).toBe(4);
    expect(state.rewards.map((r) => r.toFixed(1))).toStrictEqual(['0.1', '0.2', '0.3', '0.4']);
    expect(state.accuracies).toStrictEqual([0.05, 0.1, 0.15000000000000002, 0.2]);
    expect(state.evals.map((e) => [e.label, e.step, e.summary.accuracy])).toStrictEqual([
      ['step-00000', 0, 0.25],
      ['step-00004', 4, 0.75],
    ]);
    expect([state.droppedGroups, state.groups]).toStrictEqual([2, 16]);
    expect(state.warnings).toStrictEqual(['b', 'c', 'd']);
    expect(state.status).toBe('finished');
    expect(state.evaluating).toBeUndefined();
    // The scroll-back log is exactly the plain lines of the events worth keeping.
    const kept = [...events.slice(0, -1), ...warnings, events.at(-1)!].filter(
      (e) => !['phase', 'stepStarted', 'episodeFinished', 'evalStarted'].includes(e.type),
    );
    expect(state.log).toStrictEqual(kept.map((e) => formatEvent(e)));
  });

  test('returns progress within a step from finished episodes, and an ETA at the pace so far', () => {
    let s = reduceDashboard(
      initialDashboard(),
      { type: 'runStarted', runDir: 'r', startStep: 0, totalSteps: 4, resumed: false },
      0,
    );
    s = reduceDashboard(s, { type: 'stepStarted', step: 1, episodes: 8 }, 10_000);
    s = reduceDashboard(s, { type: 'episodeFinished', step: 1, done: 4, total: 8, reward: 1, failed: false }, 12_000);
    // An episode of step 2 collected ahead (rollout.max_staleness > 0) is not step 1's progress.
    s = reduceDashboard(s, { type: 'episodeFinished', step: 2, done: 7, total: 8, reward: 1, failed: false }, 12_000);
    expect(progressFraction(s)).toBe(0.125);
    expect(etaSeconds(s, 14_000)).toBe(28);
    s = reduceDashboard(s, { type: 'stepFinished', step: 1, metrics: stepMetricsAt(1) }, 18_000);
    s = reduceDashboard(s, { type: 'evalStarted', label: 'step-00001', tasks: 4 }, 18_000);
    // During an eval the step fraction stays at the steps finished.
    expect(progressFraction(s)).toBe(0.25);
    expect(etaSeconds(initialDashboard(), 5)).toBeUndefined();
  });

  test('returns progress of a resumed run counted from its checkpoint, and of a bare eval by episodes', () => {
    let s = reduceDashboard(
      initialDashboard(),
      { type: 'runStarted', runDir: 'r', startStep: 6, totalSteps: 10, resumed: true },
      0,
    );
    s = reduceDashboard(s, { type: 'stepFinished', step: 7, metrics: stepMetricsAt(7) }, 1);
    expect([s.stepsDone, progressFraction(s), s.phase]).toStrictEqual([7, 0.25, 'step 7 done']);
    let e = reduceDashboard(initialDashboard('eval'), { type: 'evalStarted', label: 'base', tasks: 10 }, 0);
    e = reduceDashboard(e, { type: 'episodeFinished', step: 0, done: 3, total: 10, reward: 0, failed: false }, 1000);
    expect(progressFraction(e)).toBe(0.3);
    e = reduceDashboard(e, { type: 'evalFinished', label: 'base', step: 0, summary: evalSummaryOf('base', 0.5) }, 2000);
    expect(e.evals).toHaveLength(1);
  });
});

describe('reduceDashboard, supervised steps', () => {
  test('returns the loss and token accuracy of sft steps as its curves, marked supervised', () => {
    let s = reduceDashboard(
      initialDashboard(),
      { type: 'runStarted', runDir: 'r', startStep: 0, totalSteps: 4, resumed: false },
      0,
    );
    const metrics = stepMetricsAt(1, { 'train/loss': 0.75, 'train/token_accuracy': 0.5 });
    s = reduceDashboard(s, { type: 'stepFinished', step: 1, metrics }, 1);
    expect([s.rewards, s.accuracies, s.supervised]).toStrictEqual([[0.75], [0.5], true]);
    s = reduceDashboard(s, { type: 'stepFinished', step: 2, metrics: stepMetricsAt(2) }, 2);
    expect(s.supervised).toBe(false);
  });
});

describe('sparkline', () => {
  test('returns one block per value scaled between min and max, the last `width` values only', () => {
    expect(sparkline([0, 1, 2, 3, 4, 5, 6, 7], 8)).toBe('▁▂▃▄▅▆▇█');
    expect(sparkline([0, 7, 0, 7], 3)).toBe('█▁█');
    expect(sparkline([2, 2], 5)).toBe('▄▄');
    expect(sparkline([], 5)).toBe('');
  });
});

describe('progressBar', () => {
  test('returns filled and empty cells for the fraction, clamped', () => {
    expect([progressBar(0.5, 10), progressBar(2, 4), progressBar(-1, 3)]).toStrictEqual(['█████░░░░░', '████', '░░░']);
  });
});

describe('formatSeconds', () => {
  test('returns durations as atk runs prints them, and - when unknown', () => {
    expect([
      formatSeconds(42.4),
      formatSeconds(185),
      formatSeconds(7620),
      formatSeconds(undefined),
      formatSeconds(Infinity),
    ]).toStrictEqual(['42s', '3m 05s', '2h 07m', '-', '-']);
  });
});
