import type { EvalSummary, RunEvent, StepMetrics } from '../run/events.js';

/**
 * The plain, one-line-per-thing rendering of a run's events (CI logs, pipes, `--no-tui`).
 * Returns undefined for events too frequent to print as lines (single episodes).
 */
export function formatEvent(event: RunEvent): string | undefined {
  switch (event.type) {
    case 'runStarted':
      return `${event.resumed ? 'resuming' : 'run'} ${event.runDir} at step ${event.startStep}/${event.totalSteps}`;
    case 'phase':
      return event.message;
    case 'stepFinished': {
      const m = event.metrics;
      return (
        `step ${String(m.step).padStart(4)}  ${scoreText(m)}  ` +
        `gen tok/s ${Math.round(m.generation_tokens_per_s)}  train tok/s ${Math.round(m['train/tokens_per_s'] ?? 0)}  ep ${m.episode_seconds_mean.toFixed(2)}s  ` +
        `dropped ${m.dropped_groups}/${m.groups}  step ${m.time_step_s.toFixed(1)}s` +
        conversationText(m) +
        (m.failed_episodes ? `  failed ${m.failed_episodes}` : '') +
        // Only runs that collect ahead (rollout.max_staleness > 0) have stale episodes to report.
        (m.staleness_max > 0 || m.stale_groups_dropped > 0
          ? `  stale ${m.staleness_mean.toFixed(2)}/${m.staleness_max} dropped ${m.stale_groups_dropped}  busy engine ${pct(m.engine_busy_share)} trainer ${pct(m.trainer_busy_share)}`
          : '') +
        samplingText(m)
      );
    }
    case 'evalStarted':
      return `eval ${event.label}: ${event.tasks} tasks`;
    case 'evalFinished':
      return `eval ${event.label}: ${formatEvalSummary(event.summary)}`;
    case 'checkpointSaved':
      return `checkpoint after step ${event.step}: ${event.path}`;
    case 'warning':
      return `warning: ${event.message}`;
    case 'runFinished':
      return `run ${event.status}`;
    case 'stepStarted':
    case 'episodeFinished':
      return undefined;
  }
}

/**
 * What a step scored: its episodes' reward and success, or for a supervised step (sft, which samples
 * nothing: its "episodes" are the references, always right) the loss and the share of reference tokens
 * the model ranked first.
 */
export function scoreText(m: StepMetrics): string {
  const tokenAccuracy = m['train/token_accuracy'];
  if (tokenAccuracy !== undefined) return `loss ${(m['train/loss'] ?? 0).toFixed(3)}  token acc ${pct(tokenAccuracy)}`;
  return `reward ${m.reward_mean.toFixed(3)}  acc ${pct(m.accuracy)}`;
}

/** One line of eval figures. */
export function formatEvalSummary(s: EvalSummary): string {
  const passes = Object.entries(s.pass_at_k)
    .map(([k, v]) => `${k} ${pct(v)}`)
    .join('  ');
  return (
    `accuracy ${pct(s.accuracy)}  reward ${s.reward_mean.toFixed(3)}  ${passes}  ` +
    `tools/ep ${s.tool_calls_per_episode.toFixed(2)}  tool errors ${pct(s.tool_error_rate)}  turns ${s.mean_turns.toFixed(2)}` +
    conversationText(s) +
    (s.failed_episodes ? `  failed ${s.failed_episodes}` : '')
  );
}

/** Multi-turn figures, when the run has them: user turns and policy violations per episode. */
export function conversationText(
  s: Pick<EvalSummary, 'user_turns_per_episode' | 'policy_violations_per_episode'>,
): string {
  return (
    (s.user_turns_per_episode === undefined ? '' : `  user turns ${s.user_turns_per_episode.toFixed(2)}`) +
    (s.policy_violations_per_episode === undefined
      ? ''
      : `  violations/ep ${s.policy_violations_per_episode.toFixed(2)}`)
  );
}

/** Dynamic sampling's groups kept of those sampled and its rounds, and the curriculum's skips, for the runs that turn them on. */
function samplingText(m: StepMetrics): string {
  const sampled = m['dynamic_sampling/groups_sampled'];
  const solved = m['curriculum/skipped_solved'];
  return (
    (sampled === undefined
      ? ''
      : `  kept ${m['dynamic_sampling/groups_kept']}/${sampled} groups in ${m['dynamic_sampling/rounds']} round(s)`) +
    (solved === undefined ? '' : `  skipped ${solved} solved ${m['curriculum/skipped_unsolved']} unsolved`)
  );
}

function pct(x: number): string {
  return `${(100 * x).toFixed(1)}%`;
}
