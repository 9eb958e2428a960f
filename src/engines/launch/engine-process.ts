import { mkdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { ProviderError } from '../../errors/index.js';
import { probe, requestJson, type HttpTarget } from '../../util/http.js';
import type { EngineCommand } from './engine-command.js';
import { killGroup, startWatchdog, trackGroup } from './process-group.js';

/** Where a starting engine is; the CLI shows it while a large model loads (minutes). */
export interface EngineStartProgress {
  readonly replica: number;
  /** spawned: process started; health: waiting for GET /health; models: waiting for GET /v1/models; ready. */
  readonly phase: 'spawned' | 'health' | 'models' | 'ready';
  readonly elapsedS: number;
  readonly timeoutS: number;
}

export interface LaunchEngineOptions {
  readonly name: 'vllm' | 'sglang';
  readonly command: EngineCommand;
  /** Port the command binds on `host` (it is already in `command`). */
  readonly port: number;
  /** Address the command binds; default 127.0.0.1. */
  readonly host?: string;
  /** Name /v1/models must list before the engine counts as ready. */
  readonly servedModelName: string;
  /** stdout and stderr are appended here (the run's logs/engine.log). */
  readonly logFile: string;
  readonly startupTimeoutMs: number;
  /** Index among replicas, for progress and messages. */
  readonly replica?: number;
  readonly cwd?: string;
  readonly onProgress?: (progress: EngineStartProgress) => void;
  /** Aborting stops the start and the process; later, call stop(). */
  readonly signal?: AbortSignal;
  /** Seconds between SIGTERM and SIGKILL in stop(); default 10 (vLLM frees GPU memory on SIGTERM). */
  readonly graceMs?: number;
}

/** A running engine process (the leader of its own process group). */
export interface EngineProcess {
  readonly pid: number;
  readonly baseUrl: string;
  readonly logFile: string;
  /** Resolves with the exit code (null when killed by a signal) once the leader has exited. */
  readonly exited: Promise<number | null>;
  /** Stops the whole process group (SIGTERM, then SIGKILL); idempotent; resolves once all of it is gone. */
  stop(): Promise<void>;
}

/** Failure to start an engine: the message quotes the log's last lines and names the log. */
export class EngineStartError extends ProviderError {
  readonly logPath: string;
  readonly logTail: readonly string[];

  constructor(message: string, logPath: string, logTail: readonly string[], hint: string) {
    super(withLogTail(message, logPath, logTail), { hint });
    this.logPath = logPath;
    this.logTail = logTail;
  }
}

/** `message` followed by the last lines of the log at `logPath`, indented, or a note that the log is empty. */
export function withLogTail(message: string, logPath: string, logTail: readonly string[]): string {
  return logTail.length
    ? `${message}\n  last lines of ${logPath}:\n${logTail.map((l) => `    ${l}`).join('\n')}`
    : `${message} (log: ${logPath}, empty)`;
}

const POLL_MS = 250;
const TAIL_LINES = 15;

/**
 * Starts one engine server in its own process group with its output appended to `logFile`, and waits
 * until `GET /health` answers 200 and `GET /v1/models` lists the served model. The group is killed when
 * stop() is called, when atk exits, and (through a watchdog) when atk dies without exiting.
 * @throws EngineStartError when the process exits during startup or is not ready within the timeout
 * (both quote the log's last lines); the signal's reason when aborted.
 */
export async function launchEngineProcess(options: LaunchEngineOptions): Promise<EngineProcess> {
  mkdirSync(dirname(options.logFile), { recursive: true });
  const child = execa(options.command.file, options.command.args, {
    cwd: options.cwd,
    env: { ...options.command.env, PYTHONUNBUFFERED: '1' },
    detached: true,
    stdin: 'ignore',
    stdout: { file: options.logFile, append: true },
    stderr: { file: options.logFile, append: true },
    reject: false,
    forceKillAfterDelay: false,
  });
  // The leader's own exit: execa's result also waits for every process holding the log's descriptor, and
  // vLLM's engine core, its child, outlives a killed API server until the group is stopped.
  const exited = new Promise<number | null>((resolve) => {
    const end = (code: number | null | undefined, signal: unknown): void => resolve(code ?? (signal ? null : 127));
    child.nodeChildProcess.once('exit', end);
    void child.then((result) => end(result.exitCode, result.signal)); // a spawn that failed emits no exit
  });
  const pid = child.pid;
  if (pid === undefined) {
    const result = await child;
    const why = 'originalMessage' in result ? result.originalMessage : 'spawn failed';
    throw new EngineStartError(
      `${options.name}: could not start ${options.command.file} (${why})`,
      options.logFile,
      await logTail(options.logFile),
      commandHint(options.name),
    );
  }
  trackGroup(pid);
  const stopWatchdog = startWatchdog(pid);
  let stopping: Promise<void> | undefined;
  const engine: EngineProcess = {
    pid,
    baseUrl: `http://${options.host ?? '127.0.0.1'}:${options.port}`,
    logFile: options.logFile,
    exited,
    stop: () => (stopping ??= killGroup(pid, exited, options.graceMs ?? 10_000).finally(stopWatchdog)),
  };
  try {
    await waitUntilReady(engine, options);
  } catch (error) {
    await engine.stop();
    throw error;
  }
  return engine;
}

async function waitUntilReady(engine: EngineProcess, options: LaunchEngineOptions): Promise<void> {
  const started = performance.now();
  const replica = options.replica ?? 0;
  const timeoutS = options.startupTimeoutMs / 1000;
  const target: HttpTarget = { name: options.name, baseUrl: engine.baseUrl, timeoutMs: 5000, retries: 0, backoffMs: 0 };
  let exitCode: number | null | undefined;
  void engine.exited.then((code) => (exitCode = code));
  const state: { phase: EngineStartProgress['phase'] } = { phase: 'spawned' };
  const report = (next: EngineStartProgress['phase']): void => {
    state.phase = next;
    options.onProgress?.({ replica, phase: next, elapsedS: (performance.now() - started) / 1000, timeoutS });
  };
  report('spawned');
  report('health');
  for (;;) {
    options.signal?.throwIfAborted();
    if (exitCode !== undefined) {
      const how = exitCode === null ? 'was killed' : `exited with code ${exitCode}`;
      throw new EngineStartError(
        `${options.name} ${how} during startup`,
        options.logFile,
        await logTail(options.logFile),
        commandHint(options.name),
      );
    }
    if (state.phase === 'health' && (await probe(target, '/health'))) report('models');
    if (state.phase === 'models' && (await listsModel(target, options.servedModelName))) return report('ready');
    if (performance.now() - started > options.startupTimeoutMs) {
      throw new EngineStartError(
        `${options.name} was not ready within ${timeoutS} s (still waiting for ${state.phase === 'health' ? 'GET /health' : `GET /v1/models to list ${options.servedModelName}`})`,
        options.logFile,
        await logTail(options.logFile),
        'raise model.engine.startup_timeout_s if the model is still loading; otherwise the log says where it is stuck',
      );
    }
    options.onProgress?.({ replica, phase: state.phase, elapsedS: (performance.now() - started) / 1000, timeoutS });
    await sleep(POLL_MS, undefined, options.signal ? { signal: options.signal } : undefined).catch(() =>
      options.signal?.throwIfAborted(),
    );
  }
}

async function listsModel(target: HttpTarget, name: string): Promise<boolean> {
  try {
    const reply = (await requestJson(target, 'GET', '/v1/models')) as { data?: { id?: unknown }[] };
    return Array.isArray(reply.data) && reply.data.some((m) => m.id === name);
  } catch {
    return false;
  }
}

/** The last non-empty lines of a log file (empty when it is missing). */
export async function logTail(file: string, lines = TAIL_LINES): Promise<string[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text
    .slice(-64 * 1024)
    .split(/\r?\n/)
    .filter((l) => l.trim() !== '')
    .slice(-lines);
}

function commandHint(name: 'vllm' | 'sglang'): string {
  return `is ${INSTALL_CHECKS[name]} and does the model fit the GPU share? model.engine.command overrides the command`;
}

const INSTALL_CHECKS: Readonly<Record<'vllm' | 'sglang', string>> = {
  vllm: 'vLLM installed (vllm --version)',
  sglang: 'SGLang installed (python3 -c "import sglang")',
};
