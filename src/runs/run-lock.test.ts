import { spawn, type ChildProcess } from 'node:child_process';
import fs, { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import fsp, { rm } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, test, vi } from 'vitest';
import { newRecipeRun, reopenRecipeRun } from '../cli/recipe-run.js';
import { InputError } from '../errors/index.js';
import { projectRoot } from '../util/paths.js';
import { LOCK_FILE, type LockHolder, lockRunDir, processAlive } from './run-lock.js';
import { withPatched } from '../__fixtures__/patch-builtin.js';

const CHILD = join(projectRoot(), 'src', '__fixtures__', 'run-dir-child.ts');
const CLI = join(projectRoot(), 'src', '__fixtures__', 'atk-cli.ts');
const root = mkdtempSync(join(tmpdir(), 'atk-run-lock-'));
const children: ChildProcess[] = [];
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await rm(root, { recursive: true, force: true });
});

/** A fresh run directory of the smoke recipe, its lock released by this process. */
async function freshRun(name: string): Promise<string> {
  const { run } = await newRecipeRun('recipes/smoke/quickstart.yaml', [`output.runs_dir=${join(root, name)}`]);
  expect(existsSync(join(run.dir, LOCK_FILE))).toBe(true);
  await run.release();
  return run.dir;
}

/** A second process holding the run's writer lock until it is killed. */
async function holder(dir: string): Promise<ChildProcess> {
  const child = spawn('node', ['--import', 'tsx', CHILD, 'hold', dir], {
    cwd: projectRoot(),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => String(chunk).includes('locked') && resolve());
    child.once('exit', (code) => reject(new Error(`holder exited with ${code}`)));
  });
  return child;
}

describe('run directory writer lock', () => {
  test('rejects atk run --resume while another process writes the run (exit 2, one line naming it), then takes over once it is SIGKILLed', async () => {
    const dir = await freshRun('live');
    const first = await holder(dir);
    const refused = await execa('node', ['--import', 'tsx', CLI, 'run', '--resume', dir, '--no-tui'], {
      cwd: projectRoot(),
      reject: false,
      env: { CI: 'true' },
    });
    const started = (JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8')) as { started_at: string }).started_at;
    expect([refused.exitCode, String(refused.stderr).split('\n')[0]]).toStrictEqual([
      2,
      `run directory ${dir} is being written by atk pid ${first.pid} on this host (started ${started})`,
    ]);
    await expect(reopenRecipeRun(dir, [])).rejects.toBeInstanceOf(InputError);

    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    expect(existsSync(join(dir, LOCK_FILE))).toBe(true);
    const { run } = await reopenRecipeRun(dir, []);
    expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8'))).toMatchObject({
      host: hostname(),
      pid: process.pid,
    });
    expect((await run.manifest()).status_history.at(-1)?.message).toBe(
      `took over the writer lock of atk pid ${first.pid} on ${hostname()} (started ${started}): that process is gone`,
    );
    await run.release();
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
  }, 60_000);

  test('returns no lock left after a writer exits normally', async () => {
    const dir = await freshRun('normal');
    const done = await execa('node', ['--import', 'tsx', CHILD, 'lock', dir], { cwd: projectRoot() });
    expect([String(done.stdout).trim(), existsSync(join(dir, LOCK_FILE))]).toStrictEqual(['locked', false]);
  });

  test('rejects a lock held on another host unless forced, and takes over a reused pid whose start time differs', async () => {
    const dir = await freshRun('hosts');
    const elsewhere = { host: 'gpu-node-7', pid: 4242, started_at: '2026-01-01T00:00:00.000Z' };
    writeFileSync(join(dir, LOCK_FILE), JSON.stringify(elsewhere));
    await expect(lockRunDir(dir)).rejects.toThrow(
      `run directory ${dir} is locked by atk pid 4242 on host gpu-node-7 (started 2026-01-01T00:00:00.000Z)`,
    );
    const forced = await lockRunDir(dir, { force: true });
    expect(forced.tookOver).toStrictEqual(elsewhere);
    await forced.release();
    // The parent of this process is alive, but it did not start in 2001: its pid was reused.
    writeFileSync(
      join(dir, LOCK_FILE),
      JSON.stringify({ host: hostname(), pid: process.ppid, started_at: '2001-01-01T00:00:00.000Z' }),
    );
    const reused = await lockRunDir(dir);
    expect(reused.tookOver?.pid).toBe(process.ppid);
    await reused.release();
  });
});

let dirs = 0;
/** A fresh empty directory to lock. */
function lockDir(): string {
  const dir = join(root, `bare-${dirs++}`);
  mkdirSync(dir);
  return dir;
}

function lockFile(dir: string): unknown {
  return JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8'));
}

/** The pid of a process that has exited. */
async function deadPid(): Promise<number> {
  return Number((await execa('node', ['-e', 'process.stdout.write(String(process.pid))'])).stdout);
}

/** This process's start time as its lock records it (from /proc, in ms). */
async function myStart(): Promise<string> {
  const dir = lockDir();
  const lock = await lockRunDir(dir);
  const { started_at } = lockFile(dir) as LockHolder;
  await lock.release();
  return started_at;
}

describe('lockRunDir', () => {
  test('returns the lock again to the process that holds it, and rejects another host using the same pid', async () => {
    const dir = lockDir();
    const first = await lockRunDir(dir);
    const held = readFileSync(join(dir, LOCK_FILE), 'utf8');
    const again = await lockRunDir(dir);
    expect([again.tookOver, readFileSync(join(dir, LOCK_FILE), 'utf8')]).toStrictEqual([undefined, held]);
    await again.release();
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
    await first.release();

    const twin = { ...(JSON.parse(held) as LockHolder), host: `not-${hostname()}` };
    writeFileSync(join(dir, LOCK_FILE), JSON.stringify(twin));
    const error = await lockRunDir(dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect([(error as InputError).message, (error as InputError).hint]).toStrictEqual([
      `run directory ${dir} is locked by atk pid ${process.pid} on host not-${hostname()} (started ${twin.started_at})`,
      'if that process is gone, take the lock over with --force',
    ]);
    expect(lockFile(dir)).toStrictEqual(twin);
  });

  test('returns a forced takeover of another host whose pid is alive here', async () => {
    const dir = lockDir();
    const elsewhere = { host: `not-${hostname()}`, pid: process.ppid, started_at: '2026-01-01T00:00:00.000Z' };
    writeFileSync(join(dir, LOCK_FILE), JSON.stringify(elsewhere));
    // The same pid on this host, started when the lock says: a local process of that pid is alive.
    const started = new Date(Date.parse(await myStart())).toISOString();
    const sameStart = { ...elsewhere, pid: process.pid, started_at: started };
    writeFileSync(join(dir, LOCK_FILE), JSON.stringify(sameStart));
    const forced = await lockRunDir(dir, { force: true });
    expect([forced.tookOver, (lockFile(dir) as LockHolder).host]).toStrictEqual([sameStart, hostname()]);
    await forced.release();
  });

  test('rejects in-process while a live process of this host holds the lock, naming it', async () => {
    const dir = lockDir();
    writeFileSync(join(dir, 'manifest.json'), '{}\n'); // all the fixture's openRunDir needs
    const child = await holder(dir);
    const { started_at } = lockFile(dir) as LockHolder;
    const error = await lockRunDir(dir, { force: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect([(error as InputError).message, (error as InputError).hint]).toStrictEqual([
      `run directory ${dir} is being written by atk pid ${child.pid} on this host (started ${started_at})`,
      `wait for it to finish, or stop it (kill ${child.pid}); one run directory has one writer`,
    ]);
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
  });

  test('returns a lock taken over without a previous holder from a torn or incomplete lock file', async () => {
    const pid = await deadPid();
    const host = hostname();
    const started_at = '2026-01-01T00:00:00.000Z';
    for (const text of [
      '',
      '{"host":',
      'null',
      JSON.stringify({ pid, started_at }),
      JSON.stringify({ host, started_at }),
      JSON.stringify({ host, pid }),
      JSON.stringify({ host, pid: String(pid), started_at }),
    ]) {
      const dir = lockDir();
      writeFileSync(join(dir, LOCK_FILE), text);
      const lock = await lockRunDir(dir);
      expect([text, lock.tookOver, (lockFile(dir) as LockHolder).pid]).toStrictEqual([text, undefined, process.pid]);
      await lock.release();
    }
  });

  test('rejects a directory that does not exist with its error, and leaves no file handle open', async () => {
    const missing = join(root, 'no-such-run');
    await expect(lockRunDir(missing)).rejects.toMatchObject({ code: 'ENOENT' });
    const dir = lockDir();
    const open = readdirSync('/proc/self/fd').length;
    for (let i = 0; i < 10; i++) await (await lockRunDir(dir)).release();
    expect(readdirSync('/proc/self/fd').length).toBe(open);
  });

  test('rejects after five rounds when the lock file keeps coming back torn', async () => {
    const dir = lockDir();
    const path = join(dir, LOCK_FILE);
    writeFileSync(path, '{"host":');
    let removals = 0;
    // Another starting atk recreates the torn file as fast as this one removes it.
    await withPatched(
      fsp,
      'rm',
      (original) =>
        (async (target: string, options?: Parameters<typeof original>[1]) => {
          if (target !== path) return original(target, options);
          removals++;
        }) as typeof original,
      async () => {
        const error = await lockRunDir(dir).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(InputError);
        expect([(error as InputError).message, (error as InputError).hint]).toStrictEqual([
          `run directory ${dir}: could not take its writer lock (${LOCK_FILE} keeps changing)`,
          'another atk is starting on this run; try again',
        ]);
      },
    );
    expect([removals, readFileSync(path, 'utf8')]).toStrictEqual([5, '{"host":']);
  });
});

describe('lockRunDir racing another process over a stale lock', () => {
  /**
   * A stale lock of `stale`; as this process moves it aside, another process has already replaced it
   * with `replacement` (text written to the lock file just before the move), or removed it (undefined).
   */
  async function race(
    stale: LockHolder,
    replacement: string | undefined,
  ): Promise<{ tookOver: LockHolder | undefined; after: string; leftovers: string[] }> {
    const dir = lockDir();
    const path = join(dir, LOCK_FILE);
    writeFileSync(path, JSON.stringify(stale));
    let tookOver: LockHolder | undefined;
    let raced = false;
    await withPatched(
      fsp,
      'rename',
      (original) =>
        (async (from: string, to: string) => {
          if (from === path && !raced) {
            raced = true;
            if (replacement === undefined) await rm(path);
            else writeFileSync(path, replacement);
          }
          return original(from, to);
        }) as typeof original,
      async () => {
        const lock = await lockRunDir(dir, { force: true });
        tookOver = lock.tookOver;
      },
    );
    const after = readFileSync(path, 'utf8');
    const leftovers = readdirSync(dir).filter((n) => n !== LOCK_FILE);
    await rm(path);
    return { tookOver, after, leftovers };
  }

  test('returns the holder that replaced the judged lock as the one taken over, never the judged one', async () => {
    const pid = await deadPid();
    const stale = { host: hostname(), pid, started_at: '2026-01-01T00:00:00.000Z' };
    const others = [
      { ...stale, pid: pid + 100_000 },
      { ...stale, started_at: '2026-02-02T00:00:00.000Z' },
      { ...stale, host: `not-${hostname()}` },
    ];
    for (const other of others) {
      const { tookOver, after, leftovers } = await race(stale, JSON.stringify(other));
      expect([tookOver, (JSON.parse(after) as LockHolder).pid, leftovers]).toStrictEqual([other, process.pid, []]);
    }
  });

  test("returns the lock when its holder released it between this process's create and read", async () => {
    const dir = lockDir();
    const path = join(dir, LOCK_FILE);
    writeFileSync(path, JSON.stringify({ host: `not-${hostname()}`, pid: 1, started_at: '2026-01-01T00:00:00.000Z' }));
    let released = false;
    let lock: Awaited<ReturnType<typeof lockRunDir>> | undefined;
    await withPatched(
      fsp,
      'readFile',
      (original) =>
        (async (target: string, options: Parameters<typeof original>[1]) => {
          if (target === path && !released) {
            released = true;
            await rm(path);
          }
          return original(target, options);
        }) as typeof original,
      async () => {
        lock = await lockRunDir(dir);
      },
    );
    expect([released, lock?.tookOver, (lockFile(dir) as LockHolder).pid]).toStrictEqual([true, undefined, process.pid]);
    await lock?.release();
  });

  test('returns the judged holder when what was moved aside is torn, and no holder when the lock vanished first', async () => {
    const stale = { host: hostname(), pid: await deadPid(), started_at: '2026-01-01T00:00:00.000Z' };
    const torn = await race(stale, '{"ho');
    expect([torn.tookOver, torn.leftovers]).toStrictEqual([stale, []]);
    const vanished = await race(stale, undefined);
    expect([vanished.tookOver, (JSON.parse(vanished.after) as LockHolder).pid]).toStrictEqual([undefined, process.pid]);
  });
});

describe('release', () => {
  test('returns the lock file untouched when another holder has replaced it', async () => {
    const dir = lockDir();
    const path = join(dir, LOCK_FILE);
    for (const edit of [
      (h: LockHolder) => ({ ...h, pid: h.pid + 100_000 }),
      (h: LockHolder) => ({ ...h, host: `not-${h.host}` }),
    ]) {
      const lock = await lockRunDir(dir);
      const other = JSON.stringify(edit(lockFile(dir) as LockHolder));
      writeFileSync(path, other);
      await lock.release();
      expect(readFileSync(path, 'utf8')).toBe(other);
      await rm(path);
    }
    const lock = await lockRunDir(dir);
    writeFileSync(path, '{"torn');
    await lock.release();
    expect(readFileSync(path, 'utf8')).toBe('{"torn');
  });
});

describe('the exit hook', () => {
  test("returns one exit listener however many locks are taken, which removes only the locks still this process's", async () => {
    vi.resetModules();
    const fresh = (await import('./run-lock.js')) as typeof import('./run-lock.js');
    const before = process.listeners('exit');
    const [a, b, c, d, e] = [lockDir(), lockDir(), lockDir(), lockDir(), lockDir()];
    await fresh.lockRunDir(a);
    await fresh.lockRunDir(b);
    await fresh.lockRunDir(c);
    await fresh.lockRunDir(e);
    const released = await fresh.lockRunDir(d);
    await released.release();
    const added = process.listeners('exit').filter((l) => !before.includes(l));
    expect(added.length).toBe(1);
    const hook = added[0]!;
    try {
      // c has been taken over by another process since; d was released and is someone else's now.
      const other = JSON.stringify({ ...(lockFile(c) as LockHolder), pid: process.pid + 100_000 });
      writeFileSync(join(c, LOCK_FILE), other);
      writeFileSync(join(d, LOCK_FILE), JSON.stringify({ ...(lockFile(c) as LockHolder), pid: process.pid }));
      // e is held by the same pid on another host (forced over from there).
      writeFileSync(join(e, LOCK_FILE), JSON.stringify({ ...(lockFile(e) as LockHolder), host: `not-${hostname()}` }));
      rmSync(join(b, LOCK_FILE));
      (hook as (code: number) => void)(0);
      expect([a, b, c, d, e].map((dir) => existsSync(join(dir, LOCK_FILE)))).toStrictEqual([
        false,
        false,
        true,
        true,
        true,
      ]);
      expect(readFileSync(join(c, LOCK_FILE), 'utf8')).toBe(other);
    } finally {
      process.off('exit', hook as (code: number) => void);
    }
  });
});

describe('processAlive', () => {
  test('returns alive within five seconds of the recorded start and not alive from five seconds off', async () => {
    const started = Date.parse(await myStart());
    const at = (offset: number): LockHolder => ({
      host: hostname(),
      pid: process.pid,
      started_at: new Date(started + offset).toISOString(),
    });
    expect([-5000, -4999, 0, 4999, 5000].map((offset) => processAlive(at(offset)))).toStrictEqual([
      false,
      true,
      true,
      true,
      false,
    ]);
    expect(processAlive({ ...at(0), pid: await deadPid() })).toBe(false);
  });

  test('returns the start time this host reports for this process in the lock it writes', async () => {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const ticks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
    const boot = Number(/^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'))![1]);
    expect(await myStart()).toBe(new Date(boot * 1000 + ticks * 10).toISOString());
  });

  test('returns alive for a process it may not signal, and for one whose start it cannot read', async () => {
    const holderOf = { host: hostname(), pid: process.pid, started_at: '2001-01-01T00:00:00.000Z' };
    const kill = process.kill;
    try {
      // Another user's process: kill(pid, 0) fails with EPERM, yet the process exists.
      process.kill = (() => {
        throw Object.assign(new Error('EPERM'), { code: 'EPERM' });
      }) as typeof process.kill;
      expect(processAlive({ ...holderOf, started_at: new Date(Date.parse(await myStart())).toISOString() })).toBe(true);
      process.kill = (() => true) as typeof process.kill;
      // A pid with no /proc entry (here: none by that number) whose signal succeeds: its start is unknown.
      expect(processAlive({ ...holderOf, pid: 2 ** 22 + 1 })).toBe(true);
    } finally {
      process.kill = kill;
    }
  });

  test('returns alive for an unreadable start (no /proc, or a stat line it cannot parse), and a lock started from uptime', async () => {
    // No /proc at all; a process stat line it cannot parse; a /proc/stat without the boot time.
    const variants: ((path: string) => string | undefined)[] = [
      (path) => {
        if (path.startsWith('/proc/')) throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
        return undefined;
      },
      (path) => (/^\/proc\/(\d+|self)\/stat$/.test(path) ? 'garbage' : undefined),
      (path) => (path === '/proc/stat' ? 'cpu  1 2 3\n' : undefined),
    ];
    for (const variant of variants) {
      await withPatched(
        fs,
        'readFileSync',
        (original) =>
          ((path: fs.PathOrFileDescriptor, options?: unknown) =>
            variant(String(path)) ??
            (original as (p: fs.PathOrFileDescriptor, o?: unknown) => unknown)(path, options)) as typeof original,
        async () => {
          expect(processAlive({ host: hostname(), pid: process.pid, started_at: '2001-01-01T00:00:00.000Z' })).toBe(
            true,
          );
          const expected = Date.now() - process.uptime() * 1000;
          const started = Date.parse(await myStart());
          expect(Math.abs(started - expected)).toBeLessThan(1000);
        },
      );
    }
  });
});
