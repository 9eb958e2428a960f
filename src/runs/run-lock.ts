/**
 * One writer per run directory: `writer.lock` holds the host, pid and start time of the process
 * that writes the run. It is created with O_EXCL before anything else is written, removed on every
 * exit the process lives through, and a lock whose process is gone (SIGKILL, a crashed node) is
 * taken over by the next writer, so a killed run never blocks its own `--resume`.
 */
import { readFileSync, unlinkSync } from 'node:fs';
import { type FileHandle, link, open, readFile, rename, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { InputError } from '../errors/index.js';

/** The lock file's name inside a run directory. */
export const LOCK_FILE = 'writer.lock';

/** Who holds a run directory. */
export interface LockHolder {
  readonly host: string;
  readonly pid: number;
  /** When the holding process started (ISO 8601): a pid reused by a later process does not match it. */
  readonly started_at: string;
}

/** A lock this process holds. */
export interface RunLock {
  readonly path: string;
  /** The earlier holder whose lock was taken over (its process was gone, or `force` on another host). */
  readonly tookOver?: LockHolder;
  /** Removes the lock if this process still holds it. */
  release(): Promise<void>;
}

export interface LockOptions {
  /** Take over a lock held on another host, whose process this host cannot see. */
  readonly force?: boolean;
}

/**
 * Takes the writer lock of run directory `dir`. Re-entrant within one process.
 * @throws InputError (exit 2) naming the holder when a live process on this host holds it, or any
 * process on another host does and `force` is not set.
 */
export async function lockRunDir(dir: string, options: LockOptions = {}): Promise<RunLock> {
  const path = join(dir, LOCK_FILE);
  const me = thisProcess();
  let tookOver: LockHolder | undefined;
  // Bounded: each round either creates the lock, returns, throws, or removes a stale lock.
  for (let round = 0; round < 5; round++) {
    if (await createExclusive(path, me)) return held(path, tookOver);
    const holder = await readHolder(path);
    if (holder === undefined) {
      // Torn or vanished: a writer killed between create and write, or a release racing us.
      await rm(path, { force: true });
      continue;
    }
    if (holder.host === me.host && holder.pid === me.pid) return held(path, undefined);
    if (holder.host !== me.host && !options.force) {
      throw new InputError(
        `run directory ${dir} is locked by atk pid ${holder.pid} on host ${holder.host} (started ${holder.started_at})`,
        {
          hint: 'if that process is gone, take the lock over with --force',
        },
      );
    }
    if (holder.host === me.host && processAlive(holder)) {
      throw new InputError(
        `run directory ${dir} is being written by atk pid ${holder.pid} on this host (started ${holder.started_at})`,
        {
          hint: `wait for it to finish, or stop it (kill ${holder.pid}); one run directory has one writer`,
        },
      );
    }
    if (await removeIfSame(path, holder)) tookOver = holder;
  }
  throw new InputError(`run directory ${dir}: could not take its writer lock (${LOCK_FILE} keeps changing)`, {
    hint: 'another atk is starting on this run; try again',
  });
}

/** Whether `holder`'s process still runs on this host (its pid exists and started when the lock says). */
export function processAlive(holder: LockHolder): boolean {
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  const started = processStartMs(holder.pid);
  // Start times from /proc are in clock ticks; seconds of slack cover rounding and clock steps.
  return started === undefined || Math.abs(started - Date.parse(holder.started_at)) < 5_000;
}

function thisProcess(): LockHolder {
  return {
    host: hostname(),
    pid: process.pid,
    started_at: new Date(processStartMs(process.pid) ?? Date.now() - process.uptime() * 1000).toISOString(),
  };
}

async function createExclusive(path: string, me: LockHolder): Promise<boolean> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'wx');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
  try {
    await handle.writeFile(`${JSON.stringify(me)}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  return true;
}

async function readHolder(path: string): Promise<LockHolder | undefined> {
  const text = await readFile(path, 'utf8').catch(() => undefined);
  return text === undefined ? undefined : parseHolder(text);
}

function parseHolder(text: string): LockHolder | undefined {
  try {
    const value = JSON.parse(text) as Partial<LockHolder>;
    return typeof value.host === 'string' && typeof value.pid === 'number' && typeof value.started_at === 'string'
      ? { host: value.host, pid: value.pid, started_at: value.started_at }
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Removes the stale lock of `holder`. Two processes may judge the same lock stale at once: the lock
 * is moved aside (rename is atomic, one mover wins) and put back if what was moved is not the lock
 * that was judged, i.e. another process took it in between.
 */
async function removeIfSame(path: string, holder: LockHolder): Promise<boolean> {
  const aside = `${path}.${process.pid}.stale`;
  try {
    await rename(path, aside);
  } catch {
    return false;
  }
  const moved = await readHolder(aside);
  const same =
    moved === undefined ||
    (moved.pid === holder.pid && moved.host === holder.host && moved.started_at === holder.started_at);
  if (!same) await link(aside, path).catch(() => undefined);
  await rm(aside, { force: true });
  return same;
}

/** Locks this process holds, removed by the exit hook should a release be skipped. */
const heldPaths = new Set<string>();
let exitHookInstalled = false;

function held(path: string, tookOver: LockHolder | undefined): RunLock {
  heldPaths.add(path);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // 'exit' runs on a normal end, on process.exit and after a handled signal; only SIGKILL skips it.
    process.on('exit', () => {
      for (const p of heldPaths) releaseSync(p);
    });
  }
  return {
    path,
    ...(tookOver ? { tookOver } : {}),
    release: async () => {
      heldPaths.delete(path);
      const holder = await readHolder(path);
      if (holder && holder.pid === process.pid && holder.host === hostname()) await rm(path, { force: true });
    },
  };
}

function releaseSync(path: string): void {
  try {
    const holder = parseHolder(readFileSync(path, 'utf8'));
    if (holder && holder.pid === process.pid && holder.host === hostname()) unlinkSync(path);
  } catch {
    // already gone
  }
}

/** Start of process `pid` in ms since the epoch, from /proc (Linux); undefined where unreadable. */
function processStartMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 22 (starttime, clock ticks since boot), counted after the parenthesised command name.
    const ticks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
    const bootSeconds = Number(/^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'))?.[1]);
    if (!Number.isFinite(ticks) || !Number.isFinite(bootSeconds)) return undefined;
    return bootSeconds * 1000 + (ticks * 1000) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/** USER_HZ: 100 on every Linux architecture Node supports. */
const CLOCK_TICKS = 100;
