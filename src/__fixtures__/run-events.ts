// Synthetic run events shaped like the training loop's, for the dashboard's tests and its TTY demo.
import type { EvalSummary, RunEvent, StepMetrics } from '../run/events.js';

/** Metrics of step `step` (1-based, as the training loop numbers them) with a rising reward. */
export function stepMetricsAt(step: number, overrides: Partial<StepMetrics> = {}): StepMetrics {
  return {
    kind: 'train',
    step,
    at: new Date(Date.UTC(2026, 0, 1, 0, 0, step)).toISOString(),
    policy_version: step,
    reward_mean: 0.1 * step,
    accuracy: 0.05 * step,
    episodes: 8,
    failed_episodes: 0,
    groups: 4,
    dropped_groups: step % 2,
    trained_sequences: 8,
    tool_calls_per_episode: 1.25,
    tool_error_rate: 0.05,
    mean_turns: 2,
    response_tokens_mean: 30,
    generated_tokens: 240,
    generation_tokens_per_s: 900 + step,
    staleness_mean: 0,
    staleness_max: 0,
    stale_groups_dropped: 0,
    engine_busy_share: 0.5,
    trainer_busy_share: 0.35,
    episode_seconds_mean: 0.5,
    time_generation_s: 0.3,
    time_train_s: 0.2,
    time_sync_s: 0.01,
    time_step_s: 0.6,
    ...overrides,
  };
}

/** An eval summary with the given accuracy. */
export function evalSummaryOf(label: string, accuracy: number): EvalSummary {
  return {
    label,
    split: 'test',
    tasks: 4,
    samples: 1,
    reward_mean: accuracy,
    accuracy,
    pass_at_k: { 'pass@1': accuracy },
    mean_at_k: accuracy,
    tool_calls_per_episode: 1,
    tool_error_rate: 0,
    mean_turns: 2,
    mean_tokens: 30,
    failed_episodes: 0,
  };
}

/** A whole small run: an eval before, `steps` steps of 8 episodes, a warning, a checkpoint, an eval after. */
export function syntheticRun(steps: number, runDir = 'runs/demo/v001'): RunEvent[] {
  const events: RunEvent[] = [{ type: 'runStarted', runDir, startStep: 0, totalSteps: steps, resumed: false }];
  events.push(
    { type: 'evalStarted', label: 'step-00000', tasks: 4 },
    { type: 'evalFinished', label: 'step-00000', step: 0, summary: evalSummaryOf('step-00000', 0.25) },
  );
  for (let step = 1; step <= steps; step++) {
    events.push({ type: 'stepStarted', step, episodes: 8 });
    for (let done = 1; done <= 8; done++)
      events.push({ type: 'episodeFinished', step, done, total: 8, reward: done % 2, failed: false });
    events.push({ type: 'stepFinished', step, metrics: stepMetricsAt(step) });
    if (step === 2)
      events.push({ type: 'warning', message: 'step 2: no group had a learning signal; nothing trained' });
  }
  events.push({
    type: 'checkpointSaved',
    step: steps,
    path: `${runDir}/checkpoints/step-${String(steps).padStart(5, '0')}`,
  });
  events.push({ type: 'evalStarted', label: `step-${String(steps).padStart(5, '0')}`, tasks: 4 });
  events.push({
    type: 'evalFinished',
    label: `step-${String(steps).padStart(5, '0')}`,
    step: steps,
    summary: evalSummaryOf(`step-${String(steps).padStart(5, '0')}`, 0.75),
  });
  events.push({ type: 'runFinished', status: 'finished', summary: {} });
  return events;
}
