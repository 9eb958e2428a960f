import { chmod, chown, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { constants, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { launch } from '../../util/launcher.js';
import { sandboxArgv } from './command.js';
import { childrenOf, killProcessesOfUid, processesOfUid } from './processes.js';
import {
  DEFAULT_LIMITS,
  type SandboxIsolation,
  type SandboxLimits,
  type SandboxRequest,
  type SandboxResult,
  type SandboxStatus,
} from './types.js';

/** How this process runs sandboxes: decided once by the pool from `sandboxCapabilities()`. */
export interface SandboxHost {
  readonly isolation: SandboxIsolation;
  readonly bwrap: string;
  readonly prlimit: string;
  readonly python: string;
}

/** A pool slot: the uid its programs run as, when atk runs as root and can give each slot its own. */
export interface SandboxSlot {
  readonly uid?: number;
}

type KillReason = 'timeout' | 'output_limit' | 'killed';

/**
 * Runs one program and classifies how it ended. Never throws for anything the program does;
 * throws only when the sandbox itself cannot start (missing prlimit, unwritable temp dir).
 */
export async function runProgram(req: SandboxRequest, host: SandboxHost, slot: SandboxSlot): Promise<SandboxResult> {
  const limits: SandboxLimits = { ...DEFAULT_LIMITS, ...req.limits };
  const dir = await prepareDir(req, slot, host.isolation);
  try {
    return await execute(req, host, slot, limits, dir);
  } finally {
    await rm(dir.root, { recursive: true, force: true });
  }
}

interface RunDir {
  readonly root: string;
  readonly code: string;
  readonly work: string;
}

const FILE_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

async function prepareDir(req: SandboxRequest, slot: SandboxSlot, isolation: SandboxIsolation): Promise<RunDir> {
  const root = await mkdtemp(join(tmpdir(), 'atk-sandbox-'));
  const dir = { root, code: join(root, 'code'), work: join(root, 'work') };
  await chmod(root, 0o755);
  await mkdir(dir.code, { mode: 0o755 });
  await writeFile(join(dir.code, 'main.py'), req.code, { mode: 0o644 });
  for (const [name, content] of Object.entries(req.files ?? {})) {
    if (!FILE_NAME.test(name) || name === 'main.py') throw new Error(`sandbox: bad extra file name '${name}'`);
    await writeFile(join(dir.code, name), content, { mode: 0o644 });
  }
  if (isolation === 'rlimits') {
    await mkdir(dir.work, { mode: 0o700 });
    if (slot.uid !== undefined) await chown(dir.work, slot.uid, slot.uid);
  }
  return dir;
}

/** Environment of the program: nothing inherited from the host. */
const PROGRAM_ENV = {
  PATH: '/usr/local/bin:/usr/bin:/bin',
  LANG: 'C.UTF-8',
  PYTHONIOENCODING: 'utf-8',
  // One BLAS thread: each thread counts against the process limit and reserves address space.
  OPENBLAS_NUM_THREADS: '1',
  OMP_NUM_THREADS: '1',
  MKL_NUM_THREADS: '1',
};

/** Processes besides the program counted against RLIMIT_NPROC: bwrap's monitor and the reporting shell. */
const PROCESS_OVERHEAD: Record<SandboxIsolation, number> = { bwrap: 2, rlimits: 1 };

async function execute(
  req: SandboxRequest,
  host: SandboxHost,
  slot: SandboxSlot,
  limits: SandboxLimits,
  dir: RunDir,
): Promise<SandboxResult> {
  // Without a uid of its own the program shares RLIMIT_NPROC with every process of the user.
  const shared = slot.uid === undefined ? processesOfUid(process.getuid?.() ?? -1).length : 0;
  const argv = sandboxArgv({
    ...host,
    codeDir: dir.code,
    limits,
    processOverhead: PROCESS_OVERHEAD[host.isolation] + shared,
  });
  const started = performance.now();
  const child = launch(argv[0], argv.slice(1), {
    cwd: host.isolation === 'rlimits' ? dir.work : dir.root,
    env: { ...PROGRAM_ENV, HOME: host.isolation === 'rlimits' ? dir.work : '/work' },
    detached: true,
    extraPipe: true,
    ...(slot.uid === undefined ? {} : { uid: slot.uid, gid: slot.uid }),
  });
  // Kills need the pid, which the launcher reports once the program has started.
  const spawnError = await new Promise<Error | undefined>((resolve) => {
    child.once('spawn', () => resolve(undefined));
    child.once('error', resolve);
  });
  if (spawnError) throw new Error(`sandbox: cannot start ${argv[0]}: ${spawnError.message}`, { cause: spawnError });
  let killReason: KillReason | undefined;
  const kill = (reason: KillReason): void => {
    if (killReason) return;
    killReason = reason;
    stopSandbox(child.pid, slot, host.isolation, () => child.exitCode === null && child.signalCode === null);
  };
  const stdout = capture(child.stdout, limits.outputBytes, () => kill('output_limit'));
  const stderr = capture(child.stderr, limits.outputBytes, () => kill('output_limit'));
  const report = capture(child.stdio[3] as Readable, 4096, () => undefined);
  child.stdin.on('error', () => undefined); // the program may exit without reading its input
  child.stdin.end(req.stdin ?? '');
  const timer = setTimeout(() => kill('timeout'), limits.wallMs);
  const onAbort = (): void => kill('killed');
  req.signal?.addEventListener('abort', onAbort, { once: true });
  if (req.signal?.aborted) onAbort();

  const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code: number | null, signal: NodeJS.Signals | null) => resolve({ code, signal }));
  });
  clearTimeout(timer);
  req.signal?.removeEventListener('abort', onAbort);
  // Whatever the program left behind dies with it.
  killTree(child.pid, slot, host.isolation);
  const wallMs = performance.now() - started;
  await Promise.all([stdout.done, stderr.done, report.done].map((done) => withTimeout(done, 500)));
  for (const stream of [child.stdout, child.stderr, child.stdio[3]]) (stream as Readable | null)?.destroy();

  const parsed = parseReport(report.text());
  const out = { stdout: stdout.text(), stderr: stderr.text(), wallMs: Math.round(wallMs), isolation: host.isolation };
  if (killReason)
    return { ...out, status: killReason, exitCode: null, signal: 'SIGKILL', cpuMs: parsed?.cpuMs ?? null };
  if (!parsed) return { ...out, status: 'killed', exitCode: null, signal: exit.signal, cpuMs: null };
  const signal = parsed.rc > 128 ? signalName(parsed.rc - 128) : null;
  const exitCode = signal ? null : parsed.rc;
  return {
    ...out,
    status: classify(parsed.rc, signal, out.stderr, parsed.cpuMs, limits),
    exitCode,
    signal,
    cpuMs: parsed.cpuMs,
  };
}

/**
 * Stops a running sandbox. Under bwrap it kills the namespace's pid 1 (the monitor's child): the
 * kernel then kills everything in the namespace and the monitor reaps pid 1 and exits. Killing
 * the monitor first would orphan pid 1 to the host's init, which in containers may reap it late
 * or never, and the zombie would count against the slot uid's process limit.
 */
function stopSandbox(
  pid: number | undefined,
  slot: SandboxSlot,
  isolation: SandboxIsolation,
  running: () => boolean,
): void {
  if (pid === undefined) return;
  const inits = isolation === 'bwrap' ? childrenOf(pid) : [];
  if (inits.length === 0) {
    killTree(pid, slot, isolation);
    return;
  }
  for (const init of inits) signalQuietly(init);
  // Should the monitor not follow (it always has so far), take the whole group down.
  setTimeout(() => running() && killTree(pid, slot, isolation), 1_000).unref();
}

function signalQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

function killTree(pid: number | undefined, slot: SandboxSlot, isolation: SandboxIsolation): void {
  if (pid !== undefined) signalQuietly(-pid);
  // Without a pid namespace a child that called setsid() escapes the group; its uid still marks it.
  if (isolation === 'rlimits' && slot.uid !== undefined) killProcessesOfUid(slot.uid);
}

interface Captured {
  readonly done: Promise<void>;
  text(): string;
}

/** Keeps the first `limit` bytes of a stream and calls `onOverflow` once when more arrive. */
function capture(stream: Readable, limit: number, onOverflow: () => void): Captured {
  const chunks: Buffer[] = [];
  let size = 0;
  let overflowed = false;
  stream.on('data', (chunk: Buffer) => {
    if (size < limit) chunks.push(chunk.subarray(0, limit - size));
    size += chunk.length;
    if (size > limit && !overflowed) {
      overflowed = true;
      onOverflow();
    }
  });
  const done = new Promise<void>((resolve) => {
    stream.once('close', resolve);
    stream.once('end', resolve);
    stream.once('error', () => resolve());
  });
  return { done, text: () => Buffer.concat(chunks).toString('utf8') };
}

function withTimeout(promise: Promise<void>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    void promise.then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** Parses the reporting shell's `rc=N` line and `times` output (line 2 = children's user and system time). */
export function parseReport(text: string): { rc: number; cpuMs: number | null } | undefined {
  const rc = /rc=(\d+)/.exec(text);
  if (!rc) return undefined;
  const times = [...text.matchAll(/(\d+)m([\d.]+)s\s+(\d+)m([\d.]+)s/g)];
  const children = times[1];
  const cpuMs = children
    ? Math.round(
        (Number(children[1]) * 60 + Number(children[2]) + Number(children[3]) * 60 + Number(children[4])) * 1000,
      )
    : null;
  return { rc: Number(rc[1]), cpuMs };
}

const MEMORY_PATTERNS = /MemoryError|Cannot allocate memory|std::bad_alloc|out of memory|memory allocation failed/;
/** EFBIG as CPython reports it: it ignores SIGXFSZ, so a write past RLIMIT_FSIZE fails and the program dies of the OSError. */
const FILE_SIZE_PATTERNS = /File too large/;

function classify(
  rc: number,
  signal: string | null,
  stderr: string,
  cpuMs: number | null,
  limits: SandboxLimits,
): SandboxStatus {
  if (signal === 'SIGXCPU') return 'timeout';
  if (signal === 'SIGKILL' && cpuMs !== null && cpuMs >= limits.cpuMs) return 'timeout';
  if (signal === 'SIGXFSZ') return 'file_limit';
  if (rc !== 0 && FILE_SIZE_PATTERNS.test(stderr.slice(-2000))) return 'file_limit';
  if (rc !== 0 && MEMORY_PATTERNS.test(stderr.slice(-2000))) return 'memory';
  if (signal) return 'killed';
  return rc === 0 ? 'ok' : 'runtime_error';
}

function signalName(num: number): string {
  const entry = Object.entries(constants.signals).find(([, n]) => n === num);
  return entry ? entry[0] : `SIG${num}`;
}
