import { Box, Static, Text } from 'ink';
import type { ReactElement } from 'react';
import { etaSeconds, progressFraction, type DashboardState } from './state.js';
import { formatSeconds, progressBar, sparkline } from './glyphs.js';
import { conversationText } from '../progress-lines.js';

export interface DashboardProps {
  readonly state: DashboardState;
  /** Current time in ms (a prop so that tests and snapshots are deterministic). */
  readonly now: number;
  /** Episodes the scheduler runs at once, when known: shows how many are in flight. */
  readonly concurrency?: number;
  /** Terminal width in columns. */
  readonly columns?: number;
}

/**
 * The live view of a run or eval: finished steps scroll above; below them a progress bar with ETA,
 * reward and accuracy sparklines, throughput, tool errors, dropped groups and the last warnings.
 */
export function Dashboard({ state, now, concurrency, columns = 100 }: DashboardProps): ReactElement {
  const barWidth = Math.max(10, Math.min(50, columns - 50));
  const sparkWidth = Math.max(10, Math.min(60, columns - 30));
  const fraction = progressFraction(state);
  const elapsed = state.startedAt === undefined ? undefined : (now - state.startedAt) / 1000;
  const last = state.last;
  return (
    <Box flexDirection="column">
      <Static items={state.log.map((line, i) => ({ line, i }))}>
        {(item) => <Text key={item.i}>{item.line}</Text>}
      </Static>
      <Box>
        <Text bold>{state.title}</Text>
        <Text>{`  ${state.totalSteps > 0 ? `step ${Math.min(state.stepsDone, state.totalSteps)}/${state.totalSteps}  ` : ''}`}</Text>
        <Text dimColor>{state.phase}</Text>
      </Box>
      <Box>
        <Text color="cyan">{progressBar(fraction, barWidth)}</Text>
        <Text>{` ${(fraction * 100).toFixed(0).padStart(3)}%  elapsed ${formatSeconds(elapsed)}  ETA ${formatSeconds(etaSeconds(state, now))}`}</Text>
      </Box>
      {state.episodes.total > 0 && <Text>{episodesLine(state, concurrency)}</Text>}
      {state.rewards.length > 0 && (
        <Box flexDirection="column">
          <Text>
            {state.supervised ? 'loss      ' : 'reward    '}
            <Text color="green">{sparkline(state.rewards, sparkWidth)}</Text>
            {`  ${state.rewards[state.rewards.length - 1]!.toFixed(3)}`}
          </Text>
          <Text>
            {state.supervised ? 'token acc ' : 'accuracy  '}
            <Text color="green">{sparkline(state.accuracies, sparkWidth)}</Text>
            {`  ${pct(state.accuracies[state.accuracies.length - 1]!)}`}
          </Text>
        </Box>
      )}
      {state.evals.length > 0 && (
        <Text>
          {'eval acc  '}
          <Text color="magenta">
            {sparkline(
              state.evals.map((e) => e.summary.accuracy),
              sparkWidth,
            )}
          </Text>
          {`  ${state.evals[state.evals.length - 1]!.label} ${pct(state.evals[state.evals.length - 1]!.summary.accuracy)}`}
        </Text>
      )}
      {last && (
        <Text>
          {`tok/s ${Math.round(last.generation_tokens_per_s)}  tools/ep ${last.tool_calls_per_episode.toFixed(2)}  tool errors `}
          <Text color={last.tool_error_rate > 0.2 ? 'red' : last.tool_error_rate > 0.05 ? 'yellow' : 'green'}>
            {pct(last.tool_error_rate)}
          </Text>
          {`  dropped groups ${last.dropped_groups}/${last.groups} (run ${state.droppedGroups}/${state.groups})`}
          {conversationText(last)}
          {last.failed_episodes > 0 ? <Text color="red">{`  failed episodes ${last.failed_episodes}`}</Text> : ''}
        </Text>
      )}
      {last && (
        <Text>
          {`overlap  engine busy ${pct(last.engine_busy_share)}  trainer busy ${pct(last.trainer_busy_share)}  staleness ${last.staleness_mean.toFixed(2)} (max ${last.staleness_max})`}
          {last.stale_groups_dropped > 0 ? (
            <Text color="yellow">{`  stale groups dropped ${last.stale_groups_dropped}`}</Text>
          ) : (
            ''
          )}
        </Text>
      )}
      {state.warnings.map((w, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: warnings are only appended, so an index names one warning for good
        <Text key={i} color="yellow">{`warning: ${w}`}</Text>
      ))}
    </Box>
  );
}

function episodesLine(state: DashboardState, concurrency: number | undefined): string {
  const { done, total } = state.episodes;
  const what = state.evaluating ? `eval ${state.evaluating.label} episodes` : 'episodes';
  const inFlight = concurrency === undefined ? '' : `, ${Math.min(concurrency, total - done)} in flight`;
  return `${what} ${done}/${total} done${inFlight}`;
}

function pct(x: number): string {
  return `${(100 * x).toFixed(1)}%`;
}
