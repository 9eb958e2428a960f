import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Process groups of launched engines that are still running. A vLLM server is a tree (API server, engine
 * core, one worker per GPU), so it is always stopped as a whole group, never by its first pid alone.
 */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

/** Remembers a group to kill if atk exits without stopping it (uncaught error, process.exit). */
export function trackGroup(pgid: number): void {
  liveGroups.add(pgid);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // 'exit' handlers must be synchronous: SIGKILL is the only signal that needs no follow-up.
    process.on('exit', () => {
      for (const group of liveGroups) signalGroup(group, 'SIGKILL');
    });
  }
}

/** Forgets a group once it has exited. */
export function untrackGroup(pgid: number): void {
  liveGroups.delete(pgid);
}

/** Sends `signal` to every process of the group; false when the group is gone. */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * SIGTERM to the whole group, SIGKILL after `graceMs` if anything of it is left; resolves once nothing is.
 * `exited` is the leader's exit; children may outlive it, so the group itself is polled.
 */
export async function killGroup(pgid: number, exited: Promise<unknown>, graceMs: number): Promise<void> {
  signalGroup(pgid, 'SIGTERM');
  const deadline = performance.now() + graceMs;
  while (performance.now() < deadline && signalGroup(pgid, 0)) await sleep(50);
  if (signalGroup(pgid, 'SIGKILL')) {
    // Bounded: where nothing reaps orphans, a killed child can stay a zombie member of the group.
    for (const end = performance.now() + 5000; performance.now() < end && signalGroup(pgid, 0); ) await sleep(20);
  }
  await exited;
  untrackGroup(pgid);
}

/**
 * Starts a detached shell that kills the group when atk's process disappears, which covers what an
 * 'exit' handler cannot: SIGKILL, SIGTERM without a handler, a crash of node itself. vLLM has no
 * parent-death option of its own. The watchdog ends by itself once the group is gone.
 * @returns a function that stops the watchdog.
 */
export function startWatchdog(pgid: number, parentPid = process.pid, graceS = 5): () => void {
  // dash's kill takes neither `--` nor `-s`: `kill -SIG -PGID` is the portable form.
  const script = `while kill -0 "$1" 2>/dev/null && kill -0 "-$2" 2>/dev/null; do sleep 1; done
kill -TERM "-$2" 2>/dev/null || exit 0
sleep "$3"; kill -KILL "-$2" 2>/dev/null; exit 0`;
  const child = spawn(
    '/bin/sh',
    ['-c', script, 'atk-engine-watchdog', String(parentPid), String(pgid), String(graceS)],
    { detached: true, stdio: 'ignore' },
  );
  child.on('error', () => undefined);
  child.unref();
  return () => {
    if (child.exitCode === null && child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
  };
}
