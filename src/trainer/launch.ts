import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa, type ResultPromise } from 'execa';
import { TrainerError } from '../errors/index.js';
import { startOnFreePort } from '../util/free-port.js';
import { trainerPythonPath } from '../util/paths.js';
import { runTokenHeaders } from '../util/run-token.js';
import { createTrainerClient, type TrainerClient } from './client.js';
import { findTorchPython } from './find-python.js';
import { trainerErrorFromLog } from './traceback.js';

export interface LaunchTrainerOptions {
  /** Interpreter to run as is; default: the first that findTorchPython(recipePython) accepts. */
  readonly python?: string;
  /** The recipe's model.trainer.python: tried after $ATK_PYTHON and before python3 (issue 4's order). */
  readonly recipePython?: string;
  /** Working directory of the process (the run directory); default: the current one. */
  readonly runDir?: string;
  /** stdout and stderr are appended here (a run's logs/trainer.log). */
  readonly logFile: string;
  /** Port on `host`; default: a free one, picked by `pickPort`. */
  readonly port?: number;
  /** Picks the port when `port` is not given; default: one the OS hands out on 127.0.0.1. */
  readonly pickPort?: () => Promise<number>;
  /** Address the control API binds; default 127.0.0.1 (a cluster launcher gives the node's address). */
  readonly host?: string;
  /** Starts the command elsewhere (an srun step); the trainer then does not watch atk's pid, which that node lacks. */
  readonly wrap?: (command: TrainerCommand) => TrainerCommand;
  /** torch CPU threads (OMP_NUM_THREADS and --threads). */
  readonly threads: number;
  /** Most sequences the embedded engine decodes together (--max-batch); default the trainer's (256). */
  readonly maxBatch?: number;
  /** Tokens the embedded engine's prefix cache keeps (--prefix-cache-tokens); default the trainer's (auto). */
  readonly prefixCacheTokens?: number | 'auto';
  /** Extra environment. */
  readonly env?: Readonly<Record<string, string>>;
  /** The trainer's GPUs (CUDA_VISIBLE_DEVICES); more than one starts one torchrun rank per GPU. */
  readonly gpus?: readonly number[];
  /** How long to wait for /control/health. */
  readonly startupTimeoutMs: number;
  /** Limit for one control call (model.trainer.call_timeout_s); default the client's (1 h). */
  readonly callTimeoutMs?: number;
  /** Aborting stops the start (the process is killed) or, later, nothing: call stop(). */
  readonly signal?: AbortSignal;
}

/** A running trainer: its control client, the engine URL it also serves, and a stop that always kills it. */
export interface TrainerProcess {
  readonly pid: number;
  readonly python: string;
  /** Control API base URL, e.g. http://127.0.0.1:41234 */
  readonly baseUrl: string;
  /** Base URL of the vLLM-protocol engine served by the same process (no trailing /v1). */
  readonly engineUrl: string;
  readonly logFile: string;
  readonly client: TrainerClient;
  /** Resolves with the exit code (null when killed by a signal) once the process has exited. */
  readonly exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after `graceMs` (default 5 s); resolves once the process is gone. Idempotent. */
  stop(graceMs?: number): Promise<void>;
}

const HEALTH_POLL_MS = 100;

/** Executable, arguments and environment of the trainer process (see launchTrainer). */
export interface TrainerCommand {
  readonly file: string;
  readonly args: string[];
  readonly env: Record<string, string>;
}

/**
 * `python -m atk_trainer --host 127.0.0.1 --port P ...`; with more than one GPU the same module under
 * torchrun's module form, one rank per GPU (rank 0 serves, the others follow it; trainer/PROTOCOL.md).
 * atk_trainer.torchrun is torch.distributed.run with torch 1.13's Python 3.11 parsing crash fixed.
 */
export function trainerCommand(
  python: string,
  port: number,
  options: Pick<LaunchTrainerOptions, 'threads' | 'maxBatch' | 'prefixCacheTokens' | 'env' | 'gpus' | 'host' | 'wrap'>,
): TrainerCommand {
  const gpus = options.gpus ?? [];
  const trainer = [
    '-m',
    'atk_trainer',
    '--host',
    options.host ?? '127.0.0.1',
    '--port',
    String(port),
    ...(options.wrap ? [] : ['--parent-pid', String(process.pid)]),
    '--threads',
    String(options.threads),
    ...(options.maxBatch === undefined ? [] : ['--max-batch', String(options.maxBatch)]),
    ...(options.prefixCacheTokens === undefined ? [] : ['--prefix-cache-tokens', String(options.prefixCacheTokens)]),
  ];
  const torchrun = ['-m', 'atk_trainer.torchrun', '--standalone', '--nproc_per_node', String(gpus.length)];
  return {
    file: python,
    args: gpus.length > 1 ? [...torchrun, ...trainer] : trainer,
    env: {
      // glibc gives each of the server's request threads its own malloc arena; two arenas cut the
      // quickstart trainer's peak RSS from 2.4 to 1.8 GB at the same step time. A user's setting wins.
      MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '2',
      // Activations and gradients of a step are freed and allocated again at the next one; with glibc's
      // defaults the large ones are mmapped and unmapped each time and the kernel zeroes fresh pages on
      // every fault. Keeping them in the heap took the quickstart from 83-115 s (12-28 s of it system CPU)
      // to 72-78 s (7-8 s system) on an idle 2-core host, same gain. A user's setting wins.
      MALLOC_MMAP_THRESHOLD_: process.env.MALLOC_MMAP_THRESHOLD_ ?? String(256 * 2 ** 20),
      MALLOC_TRIM_THRESHOLD_: process.env.MALLOC_TRIM_THRESHOLD_ ?? String(2 ** 30),
      MALLOC_TOP_PAD_: process.env.MALLOC_TOP_PAD_ ?? String(256 * 2 ** 20),
      // Transparent huge pages for that heap (glibc >= 2.35; older ones ignore it): the first train step
      // faults in ~1 GB, and in 4 KB pages that was 285k faults and ~2.5 s of a 2-core VM's system time.
      // In 2 MB pages: 19k faults, the quickstart's first step 3.8 -> 2.8 s. A user's setting wins.
      GLIBC_TUNABLES: process.env.GLIBC_TUNABLES ?? 'glibc.malloc.hugetlb=1',
      ...options.env,
      ...(gpus.length ? { CUDA_VISIBLE_DEVICES: gpus.join(',') } : {}),
      PYTHONPATH: trainerPythonPath(options.env?.PYTHONPATH),
      PYTHONUNBUFFERED: '1',
      OMP_NUM_THREADS: String(options.threads),
    },
  };
}

/**
 * Starts `python -m atk_trainer` (see trainerCommand) on loopback with the bundled package on PYTHONPATH and waits until
 * it answers /control/health. The trainer watches our pid and exits when we die.
 * @throws TrainerError when no Python can import torch, the process exits during startup (its
 * exception line and the log path), or health does not come within `startupTimeoutMs`.
 */
export async function launchTrainer(options: LaunchTrainerOptions): Promise<TrainerProcess> {
  const python = options.python ?? (await defaultPython(options.recipePython));
  mkdirSync(dirname(options.logFile), { recursive: true });
  if (options.port !== undefined) return startTrainer(python, options.port, options);
  return startOnFreePort(
    (port) => startTrainer(python, port, options),
    async (error) => error instanceof TrainerError && /Address already in use/.test(error.message),
    options.pickPort,
  );
}

async function startTrainer(python: string, port: number, options: LaunchTrainerOptions): Promise<TrainerProcess> {
  const local = trainerCommand(python, port, options);
  const command = options.wrap ? options.wrap(local) : local;
  // The process writes its log itself, through a descriptor it inherits: piped through this process, a
  // line it printed before answering could reach the file after the answer (its "serving on" line lagged
  // the health check under load), and a line printed after atk died would be lost.
  // execa's types list descriptors 3-9 only; it hands any descriptor to spawn as it is.
  const log = openSync(options.logFile, 'a') as 3;
  const child = execa(command.file, command.args, {
    cwd: options.runDir,
    env: command.env,
    stdin: 'ignore',
    stdout: log,
    stderr: log,
    reject: false,
    forceKillAfterDelay: false,
  });
  closeSync(log); // the child holds its own copy from the spawn on
  let running = true;
  const exited = child.then((result) => {
    running = false;
    return result.exitCode ?? null;
  });
  const baseUrl = `http://${options.host ?? '127.0.0.1'}:${port}`;
  const client = createTrainerClient({
    baseUrl,
    logFile: options.logFile,
    exited,
    ...(options.callTimeoutMs !== undefined ? { timeoutMs: options.callTimeoutMs } : {}),
  });
  let stopping: Promise<void> | undefined;
  const trainer: TrainerProcess = {
    pid: child.pid ?? -1,
    python,
    baseUrl,
    engineUrl: baseUrl,
    logFile: options.logFile,
    client,
    exited,
    stop: (graceMs = 5000) => (stopping ??= running ? kill(child, exited, graceMs) : Promise.resolve()),
  };
  try {
    await waitForHealth(trainer, options);
  } catch (error) {
    await trainer.stop(1000);
    throw error;
  }
  return trainer;
}

async function waitForHealth(trainer: TrainerProcess, options: LaunchTrainerOptions): Promise<void> {
  const deadline = performance.now() + options.startupTimeoutMs;
  let exitCode: number | null | undefined;
  void trainer.exited.then((code) => (exitCode = code));
  for (;;) {
    options.signal?.throwIfAborted();
    if (exitCode !== undefined)
      throw await trainerErrorFromLog(`trainer exited during startup (exit ${exitCode})`, trainer.logFile);
    if (await isHealthy(trainer.baseUrl)) return;
    if (performance.now() > deadline) {
      throw new TrainerError(
        `trainer did not become healthy within ${options.startupTimeoutMs / 1000} s (log: ${trainer.logFile})`,
        trainer.logFile,
        {
          hint: 'raise model.trainer.startup_timeout_s, or read the log for where it is stuck',
        },
      );
    }
    await sleep(HEALTH_POLL_MS);
  }
}

async function isHealthy(baseUrl: string): Promise<boolean> {
  try {
    const response = await fetch(`${baseUrl}/control/health`, {
      headers: runTokenHeaders(),
      signal: AbortSignal.timeout(2000),
    });
    await response.arrayBuffer();
    return response.ok;
  } catch {
    return false;
  }
}

async function kill(child: ResultPromise, exited: Promise<unknown>, graceMs: number): Promise<void> {
  child.kill('SIGTERM');
  // Unreferenced: a pending grace timer would keep atk alive for the whole grace after the trainer is gone
  // (every `atk run` ended 5 s late); the child's own handle keeps the loop alive while it runs.
  const gone = await Promise.race([
    exited.then(() => true),
    sleep(graceMs, undefined, { ref: false }).then(() => false),
  ]);
  if (!gone) {
    child.kill('SIGKILL');
    await exited;
  }
}

async function defaultPython(recipePython?: string): Promise<string> {
  const { python, tried } = await findTorchPython(recipePython);
  if (!python) {
    throw new TrainerError(`no Python that can import torch (tried ${tried.join('; ')})`, undefined, {
      hint: 'atk setup installs it (apt on Debian/Ubuntu, else a private venv; --dry-run shows how), or set ATK_PYTHON',
    });
  }
  return python;
}
