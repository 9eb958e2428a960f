import { render } from 'ink';
import type { RunEvent } from '../../run/events.js';
import { formatEvent } from '../progress-lines.js';
import { Dashboard } from './dashboard.js';
import { initialDashboard, reduceDashboard, type DashboardState } from './state.js';

export interface RenderOptions {
  /** The live ink dashboard; false gives plain lines. Pass `wantsTui(!argv['no-tui'])`. */
  readonly tui: boolean;
  /** One JSON event per line instead (per-episode events left out); wins over `tui`. */
  readonly json?: boolean;
  /** Episodes the scheduler runs at once (`rollout.concurrency`), for the in-flight count. */
  readonly concurrency?: number;
  /** Title until the run names its directory (e.g. `eval step-00010`). */
  readonly title?: string;
  readonly stdout?: NodeJS.WriteStream;
}

/** The most dashboard redraws per second while episodes finish (ink redraws the whole live area). */
const EPISODE_REDRAWS_PER_S = 10;

/**
 * Show a run's or an eval's events: the live dashboard on a terminal, plain lines (progress-lines)
 * or JSON lines otherwise. Consumes the whole stream; resolves with the final state (its `evals`
 * hold every eval summary) and rejects with the stream's error after drawing what came before it.
 */
export async function renderRunEvents(
  events: AsyncIterable<RunEvent>,
  options: RenderOptions,
): Promise<DashboardState> {
  const stdout = options.stdout ?? process.stdout;
  let state = initialDashboard(options.title);
  if (options.json || !options.tui) {
    for await (const event of events) {
      state = reduceDashboard(state, event, Date.now());
      const line = options.json
        ? event.type === 'episodeFinished'
          ? undefined
          : JSON.stringify(event)
        : formatEvent(event);
      if (line !== undefined) stdout.write(`${line}\n`);
    }
    return state;
  }
  const view = (): JSX => (
    <Dashboard
      state={state}
      now={Date.now()}
      columns={stdout.columns || 100}
      {...(options.concurrency === undefined ? {} : { concurrency: options.concurrency })}
    />
  );
  const ink = render(view(), { stdout, exitOnCtrlC: false, patchConsole: false });
  // The clock (elapsed, ETA) moves even while no event arrives.
  const ticker = setInterval(() => ink.rerender(view()), 1000);
  ticker.unref();
  let drawnAt = 0;
  try {
    for await (const event of events) {
      state = reduceDashboard(state, event, Date.now());
      if (event.type === 'episodeFinished' && Date.now() - drawnAt < 1000 / EPISODE_REDRAWS_PER_S) continue;
      drawnAt = Date.now();
      ink.rerender(view());
    }
  } finally {
    clearInterval(ticker);
    ink.rerender(view());
    ink.unmount();
    await ink.waitUntilExit().catch(() => undefined);
  }
  return state;
}

/**
 * Whether to draw the live dashboard: asked for (no `--no-tui`), stdout a terminal, and not in CI
 * (`CI` set to anything but `false`/`0`).
 */
export function wantsTui(
  wanted: boolean,
  stdout: { readonly isTTY?: boolean } = process.stdout,
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  const ci = env.CI !== undefined && env.CI !== '' && env.CI !== 'false' && env.CI !== '0';
  return wanted && stdout.isTTY === true && !ci && env.TERM !== 'dumb';
}

type JSX = ReturnType<typeof Dashboard>;
