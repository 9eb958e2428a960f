import { render } from 'ink-testing-library';
import { describe, expect, test } from 'vitest';
import { stepMetricsAt, syntheticRun } from '../../__fixtures__/run-events.js';
import type { RunEvent } from '../../run/events.js';
import { Dashboard } from './dashboard.js';
import { initialDashboard, reduceDashboard, type DashboardState } from './state.js';

function fold(events: readonly RunEvent[]): DashboardState {
  return events.reduce((s, e, i) => reduceDashboard(s, e, i * 1000), initialDashboard());
}

describe('Dashboard', () => {
  test('returns the progress bar with ETA, episodes in flight, sparklines, throughput, tool errors and dropped groups', () => {
    const events = syntheticRun(4);
    // Stop in the middle of step 3: two steps done, 4 of its 8 episodes finished.
    const cut = events.findIndex((e) => e.type === 'episodeFinished' && e.step === 3 && e.done === 4) + 1;
    const state = fold(events.slice(0, cut));
    const { lastFrame } = render(
      <Dashboard state={state} now={state.startedAt! + 20_000} concurrency={3} columns={80} />,
    );
    const lines = lastFrame()!.split('\n');
    // Finished steps and evals scroll above the live area (ink wraps them at the terminal width).
    expect(lines[0]).toBe('run runs/demo/v001 at step 0/4');
    expect(lines[1]).toMatch(/^eval step-00000: accuracy 25.0% {2}reward 0.250 {2}pass@1 25.0%/);
    expect(lines.filter((l) => /^step +[12] +reward 0\.[12]00 /.test(l))).toHaveLength(2);
    expect(lines).toContain('runs/demo/v001  step 2/4  step 3: collecting');
    // 2.5 of 4 steps in 20 s: 62.5% done, 12 s to go.
    expect(lines).toContain(`${'█'.repeat(19)}${'░'.repeat(11)}  63%  elapsed 20s  ETA 12s`);
    expect(lines).toContain('episodes 4/8 done, 3 in flight');
    expect(lines).toContain('reward    ▁█  0.200');
    expect(lines).toContain('accuracy  ▁█  10.0%');
    expect(lines).toContain('eval acc  ▄  step-00000 25.0%');
    expect(lines).toContain('tok/s 902  tools/ep 1.25  tool errors 5.0%  dropped groups 0/4 (run 1/8)');
    expect(lines).toContain('overlap  engine busy 50.0%  trainer busy 35.0%  staleness 0.00 (max 0)');
    expect(lines).toContain('warning: step 2: no group had a learning signal; nothing trained');
  });

  test('returns failed episodes in the figures line and no curves before the first step', () => {
    const empty = render(<Dashboard state={initialDashboard('eval base')} now={0} />).lastFrame()!;
    expect(empty.split('\n')).toStrictEqual(['eval base  starting', `${'░'.repeat(50)}   0%  elapsed -  ETA -`]);
    const state = fold([
      { type: 'runStarted', runDir: 'r', startStep: 0, totalSteps: 2, resumed: false },
      { type: 'stepFinished', step: 1, metrics: stepMetricsAt(1, { failed_episodes: 2, tool_error_rate: 0.5 }) },
    ]);
    const frame = render(<Dashboard state={state} now={0} />).lastFrame()!;
    expect(frame).toContain('tool errors 50.0%  dropped groups 1/4 (run 1/4)  failed episodes 2');
  });
});
