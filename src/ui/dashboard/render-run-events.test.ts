import { execFileSync, spawnSync } from 'node:child_process';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, test } from 'vitest';
import { syntheticRun } from '../../__fixtures__/run-events.js';
import type { RunEvent } from '../../run/events.js';
import { formatEvent } from '../progress-lines.js';
import { renderRunEvents, wantsTui } from './render-run-events.js';
import { shellLine } from '../../util/shell-quote.js';

class Collect extends Writable {
  text = '';
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

async function* stream(events: readonly RunEvent[], failWith?: Error): AsyncGenerator<RunEvent> {
  yield* events;
  if (failWith) throw failWith;
}

// One tmux server per screen: a new session on a socket whose server is still
// exiting after kill-server fails with "server exited unexpectedly".
const sockets: string[] = [];
const tmux = (socket: string, ...args: string[]): string =>
  execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
afterEach(() => {
  for (const socket of sockets.splice(0)) spawnSync('tmux', ['-L', socket, 'kill-server']);
});

describe('renderRunEvents', () => {
  test('returns plain progress lines without a terminal, and the final state with every eval', async () => {
    const out = new Collect();
    const events = syntheticRun(3);
    const state = await renderRunEvents(stream(events), { tui: false, stdout: out as unknown as NodeJS.WriteStream });
    expect(out.text).toBe(
      events.flatMap((e) => (formatEvent(e) === undefined ? [] : [`${formatEvent(e)}\n`])).join(''),
    );
    expect([state.stepsDone, state.status, state.evals.map((e) => e.summary.accuracy)]).toStrictEqual([
      3,
      'finished',
      [0.25, 0.75],
    ]);
  });

  test("returns JSON lines without per-episode events with json, and rethrows the stream's error after printing", async () => {
    const out = new Collect();
    const events = syntheticRun(1).slice(0, 5);
    await expect(
      renderRunEvents(stream(events, new Error('engine died')), {
        tui: true,
        json: true,
        stdout: out as unknown as NodeJS.WriteStream,
      }),
    ).rejects.toThrow('engine died');
    expect(
      out.text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as RunEvent),
    ).toStrictEqual(events.filter((e) => e.type !== 'episodeFinished'));
  });

  test('returns the live dashboard on a real pseudo-terminal (tmux), plain lines there with --no-tui', () => {
    const main = fileURLToPath(new URL('../../__fixtures__/dashboard-tty-main.ts', import.meta.url));
    const screen = (flags: string): string => {
      const socket = `atk-dashboard-test-${process.pid}-${sockets.length}`;
      sockets.push(socket);
      // CI is unset: ink (and atk) draw plain lines in CI even on a terminal.
      tmux(
        socket,
        'new-session',
        '-d',
        '-x',
        '100',
        '-y',
        '50',
        `env -u CI ${shellLine([process.execPath, '--import', 'tsx', main])} ${flags}; sleep 60`,
      );
      const deadline = Date.now() + 40_000;
      for (;;) {
        const pane = tmux(socket, 'capture-pane', '-p', '-J');
        if (pane.includes('tui=') || Date.now() > deadline) return pane;
        execFileSync('sleep', ['0.3']);
      }
    };
    const live = screen('')
      .split('\n')
      .map((l) => l.trimEnd());
    expect(live).toContain('tui=true steps=4 evals=2');
    expect(live).toContain('runs/demo/v001  step 4/4  run finished');
    expect(live).toContain('reward    ▁▃▆█  0.400');
    expect(live).toContain('eval acc  ▁█  step-00004 75.0%');
    expect(live).toContain('warning: step 2: no group had a learning signal; nothing trained');
    expect(live.some((l) => /^█{50} 100% {2}elapsed \d+s {2}ETA 0s$/.test(l))).toBe(true);
    // Every step line scrolled above the live area exactly once.
    expect(live.filter((l) => /^step +\d+ +reward /.test(l))).toHaveLength(4);
    const plain = screen('--no-tui')
      .split('\n')
      .map((l) => l.trimEnd());
    expect(plain).toContain('tui=false steps=4 evals=2');
    expect(plain).toContain('run finished');
    expect(plain.some((l) => l.startsWith('reward    '))).toBe(false);
  });
});

describe('wantsTui', () => {
  test('returns true only for a terminal outside CI when not turned off', () => {
    const tty = { isTTY: true };
    expect([
      wantsTui(true, tty, {}),
      wantsTui(false, tty, {}),
      wantsTui(true, {}, {}),
      wantsTui(true, tty, { CI: 'true' }),
      wantsTui(true, tty, { CI: 'false' }),
      wantsTui(true, tty, { TERM: 'dumb' }),
    ]).toStrictEqual([true, false, false, false, true, false]);
  });
});
