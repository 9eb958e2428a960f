// Child process of the dashboard's pseudo-terminal test: draws a synthetic run with renderRunEvents
// exactly as `atk run` does (the TUI when stdout is a terminal), then reports what it chose on stderr.
import { renderRunEvents, wantsTui } from '../ui/dashboard/index.js';
import type { RunEvent } from '../run/events.js';
import { syntheticRun } from './run-events.js';

async function* slowly(events: readonly RunEvent[]): AsyncGenerator<RunEvent> {
  for (const event of events) {
    await new Promise((resolve) => setTimeout(resolve, event.type === 'episodeFinished' ? 2 : 30));
    yield event;
  }
}

const tui = wantsTui(!process.argv.includes('--no-tui'));
const state = await renderRunEvents(slowly(syntheticRun(4)), { tui, concurrency: 3 });
process.stderr.write(`tui=${tui} steps=${state.stepsDone} evals=${state.evals.length}\n`);
