/** Limits on one sandboxed program. Every field has a default (see `DEFAULT_LIMITS`). */
export interface SandboxLimits {
  /** CPU time (user + system) in milliseconds; enforced by RLIMIT_CPU, rounded up to whole seconds. */
  readonly cpuMs: number;
  /** Wall-clock time in milliseconds; the whole process tree is killed when it passes. */
  readonly wallMs: number;
  /** Address-space limit (RLIMIT_AS) per process, in MiB. */
  readonly memoryMb: number;
  /** Processes and threads the program may have at once (RLIMIT_NPROC, per sandbox uid). */
  readonly processes: number;
  /** Bytes kept of stdout and of stderr each; a program writing more is killed (`output_limit`). */
  readonly outputBytes: number;
  /** Largest file the program may write (RLIMIT_FSIZE) and size of each scratch tmpfs, in MiB; a program past it ends `file_limit`. */
  readonly fileMb: number;
}

/** What a finished run came to. */
export type SandboxStatus = 'ok' | 'runtime_error' | 'timeout' | 'memory' | 'output_limit' | 'file_limit' | 'killed';

/** One program to run. */
export interface SandboxRequest {
  /** Python source of the main program. */
  readonly code: string;
  /** Bytes fed to the program's stdin (then closed). */
  readonly stdin?: string;
  readonly language?: 'python';
  /** Extra read-only files placed beside the main program in /sandbox (name -> content). */
  readonly files?: Readonly<Record<string, string>>;
  readonly limits?: Partial<SandboxLimits>;
  /** Aborting kills the run; it then ends with status `killed`. */
  readonly signal?: AbortSignal;
}

/** The outcome of one run. */
export interface SandboxResult {
  readonly status: SandboxStatus;
  /** Exit code of the program, or null when it died by a signal or was killed. */
  readonly exitCode: number | null;
  /** Signal that ended the program (e.g. SIGXCPU), or null. */
  readonly signal: string | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly wallMs: number;
  /** CPU time of the program and its waited-for children; null when the run was killed from outside. */
  readonly cpuMs: number | null;
  /** How the program was isolated: `bwrap` (namespaces + rlimits) or `rlimits` (fallback, weak). */
  readonly isolation: SandboxIsolation;
}

export type SandboxIsolation = 'bwrap' | 'rlimits';

/** Short limits suited to one unit test of a competitive-programming solution. */
export const DEFAULT_LIMITS: SandboxLimits = {
  cpuMs: 6_000,
  wallMs: 12_000,
  memoryMb: 1_024,
  processes: 32,
  outputBytes: 1 << 20,
  fileMb: 64,
};
