import { readdirSync, realpathSync, lstatSync } from 'node:fs';
import { dirname } from 'node:path';
import type { SandboxIsolation, SandboxLimits } from './types.js';

/** Where the program's files appear inside the sandbox (read-only). */
export const SANDBOX_CODE_DIR = '/sandbox';
/** The sandbox's own empty, writable working directory (a size-limited tmpfs). */
export const SANDBOX_WORK_DIR = '/work';

/** Everything needed to start one sandboxed program. */
export interface SandboxCommandSpec {
  readonly isolation: SandboxIsolation;
  readonly bwrap: string;
  readonly prlimit: string;
  readonly python: string;
  /** Host directory holding main.py and the extra files. */
  readonly codeDir: string;
  readonly limits: SandboxLimits;
  /** Processes already counted against the sandbox uid before the program starts (bwrap, the shell). */
  readonly processOverhead: number;
}

/**
 * The reporting shell: runs the program with fd 3 closed, then writes its exit status and the
 * CPU times of its children (`times`, line 2) to fd 3, which only the host reads. A missing
 * report means the shell itself was killed.
 */
const REPORT_SCRIPT = '"$@" 3>&-; rc=$?; { echo "rc=$rc"; times; } >&3; exit $rc';

/** argv (command first) that runs `python main.py` under rlimits, inside bwrap when isolation is `bwrap`. */
export function sandboxArgv(spec: SandboxCommandSpec): string[] {
  const inner = ['/bin/sh', '-c', REPORT_SCRIPT, 'sh', spec.python, '-I', '-B', `${codeDirInside(spec)}/main.py`];
  const limited = [spec.prlimit, ...rlimitFlags(spec.limits, spec.processOverhead), '--'];
  if (spec.isolation === 'rlimits') return [...limited, ...inner];
  return [...limited, spec.bwrap, ...bwrapFlags(spec), ...inner];
}

function codeDirInside(spec: SandboxCommandSpec): string {
  return spec.isolation === 'bwrap' ? SANDBOX_CODE_DIR : spec.codeDir;
}

/** prlimit flags: soft CPU limit sends SIGXCPU, the hard one a second later SIGKILL. */
function rlimitFlags(limits: SandboxLimits, processOverhead: number): string[] {
  const cpuSeconds = Math.max(1, Math.ceil(limits.cpuMs / 1000));
  const mib = 1024 * 1024;
  return [
    `--cpu=${cpuSeconds}:${cpuSeconds + 1}`,
    `--as=${limits.memoryMb * mib}`,
    `--nproc=${limits.processes + processOverhead}`,
    `--fsize=${limits.fileMb * mib}`,
    '--nofile=256',
    '--core=0',
  ];
}

/**
 * bwrap flags: new user/pid/net/ipc/uts/cgroup namespaces, a read-only view of only what
 * Python needs (/usr and the few /etc entries the loader and Debian's python read), fresh
 * /proc and /dev, size-limited tmpfs for /tmp and the working directory, and the code
 * read-only. Nothing of /home, /root, the project or other /etc files is visible.
 */
function bwrapFlags(spec: SandboxCommandSpec): string[] {
  const tmpfsBytes = String(spec.limits.fileMb * 1024 * 1024);
  // --as-pid-1 makes the reporting shell the namespace's init: bwrap's monitor then reaps it
  // itself (bwrap's own init reaper outlives the monitor and lingers as a zombie of the host's
  // pid 1, counting against the slot uid's process limit), and the kernel ignores signals the
  // program sends its parent. When the shell exits, everything in the namespace is killed.
  const flags = [
    '--unshare-all',
    '--unshare-user',
    '--die-with-parent',
    '--new-session',
    '--disable-userns',
    '--as-pid-1',
  ];
  flags.push(...systemBinds());
  const pythonPrefix = dirname(dirname(realpathSync(spec.python)));
  if (!pythonPrefix.startsWith('/usr')) flags.push('--ro-bind', pythonPrefix, pythonPrefix);
  flags.push('--proc', '/proc', '--dev', '/dev');
  flags.push('--size', tmpfsBytes, '--tmpfs', '/tmp');
  flags.push('--size', tmpfsBytes, '--tmpfs', SANDBOX_WORK_DIR);
  flags.push('--ro-bind', spec.codeDir, SANDBOX_CODE_DIR);
  flags.push('--chdir', SANDBOX_WORK_DIR, '--setenv', 'HOME', SANDBOX_WORK_DIR);
  // The root bwrap builds is an unlimited tmpfs; only /tmp and /work may be written.
  flags.push('--remount-ro', '/');
  return flags;
}

let cachedSystemBinds: string[] | undefined;

/** Binds of /usr, the merged-/usr symlinks (or real dirs on older systems) and the /etc entries Python needs. */
function systemBinds(): string[] {
  if (cachedSystemBinds) return cachedSystemBinds;
  const flags = ['--ro-bind', '/usr', '/usr'];
  for (const top of ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']) {
    const kind = entryKind(top);
    if (kind === 'symlink') flags.push('--symlink', readlinkRelative(top), top);
    else if (kind === 'dir') flags.push('--ro-bind', top, top);
  }
  // ld.so.cache finds multiarch libraries; alternatives holds libblas/liblapack links numpy loads.
  const etc = ['ld.so.cache', 'ld.so.conf', 'ld.so.conf.d', 'alternatives', 'localtime'];
  for (const name of safeReaddir('/etc')) if (/^python3(\.\d+)?$/.test(name)) etc.push(name);
  for (const name of etc) flags.push('--ro-bind-try', `/etc/${name}`, `/etc/${name}`);
  cachedSystemBinds = flags;
  return flags;
}

function entryKind(path: string): 'symlink' | 'dir' | 'none' {
  try {
    const st = lstatSync(path);
    return st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'dir' : 'none';
  } catch {
    return 'none';
  }
}

function readlinkRelative(path: string): string {
  const target = realpathSync(path);
  return target.startsWith('/') ? target.slice(1) : target;
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
