import { type ChildProcess, spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { fileURLToPath } from 'node:url';
import { PassThrough, type Readable, Writable } from 'node:stream';

/**
 * How a child is started: `spawn`'s options that matter to atk's short-lived children, plus a fourth
 * pipe (fd 3) for programs that report on it.
 */
export interface LaunchOptions {
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Its own process group, so a kill of `-pid` takes the children it started too. */
  readonly detached?: boolean;
  readonly uid?: number;
  readonly gid?: number;
  readonly extraPipe?: boolean;
}

/**
 * A child started by the launcher, with the part of `ChildProcess` atk uses: `pid` once started,
 * `stdin`, `stdout`, `stderr`, `stdio[3]`, `exitCode`/`signalCode`, `kill()`, and the events
 * `spawn`, `error`, `exit` and `close` (after all output), in that order.
 */
export class LaunchedProcess extends EventEmitter {
  pid: number | undefined;
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;
  readonly stdin: Writable;
  readonly stdout = new PassThrough();
  readonly stderr = new PassThrough();
  readonly stdio: [Writable, Readable, Readable, Readable | null];

  constructor(
    private readonly id: number,
    private readonly post: (message: Record<string, unknown>) => void,
    extraPipe: boolean,
  ) {
    super();
    this.stdin = new Writable({
      write: (chunk: Buffer, _encoding, done) => {
        post({ t: 'stdin', id, data: chunk });
        done();
      },
      final: (done) => {
        post({ t: 'stdin', id, end: true });
        done();
      },
    });
    this.stdio = [this.stdin, this.stdout, this.stderr, extraPipe ? new PassThrough() : null];
  }

  /** Signals the child (its whole group when started detached and `group` is set). */
  kill(signal: NodeJS.Signals = 'SIGTERM', group = false): void {
    this.post({ t: 'kill', id: this.id, signal, group });
  }

  /** @internal the launcher's report about this child. */
  deliver(message: LauncherMessage): void {
    switch (message.t) {
      case 'spawned':
        this.pid = message.pid;
        this.emit('spawn');
        return;
      case 'data':
        (this.stdio[message.fd] as PassThrough | null)?.write(message.chunk);
        return;
      case 'failed': {
        const error = Object.assign(new Error(message.message), { code: message.code });
        this.finish(null, null, error);
        return;
      }
      case 'exit':
        this.finish(message.code, message.signal);
    }
  }

  private finish(code: number | null, signal: NodeJS.Signals | null, error?: Error): void {
    for (const stream of this.stdio.slice(1)) (stream as PassThrough | null)?.end();
    if (error) this.emit('error', error);
    else {
      this.exitCode = code;
      this.signalCode = signal;
      this.emit('exit', code, signal);
    }
    // As with ChildProcess, 'close' follows once the output streams have ended.
    setImmediate(() => this.emit('close', code, signal));
  }
}

type LauncherMessage =
  | { t: 'spawned'; id: number; pid: number }
  | { t: 'data'; id: number; fd: number; chunk: Buffer }
  | { t: 'failed'; id: number; message: string; code?: string }
  | { t: 'exit'; id: number; code: number | null; signal: NodeJS.Signals | null };

const LAUNCHER_SCRIPT = fileURLToPath(new URL('../../bin/atk-launcher.mjs', import.meta.url));

let launcher: ChildProcess | undefined;
/** Running children by id, with the launcher that started them. */
const live = new Map<number, { readonly child: LaunchedProcess; readonly via: ChildProcess }>();
let nextId = 0;

/**
 * Starts `file` with `args` through atk's launcher process (bin/atk-launcher.mjs), which is forked once
 * and forks every child after that. Node's own `spawn` forks the caller: a page-table copy of all of
 * atk per child (~7 ms of blocked event loop at 360 MB) and a write fault on each heap page it touches
 * next. The launcher is shared by the process, keeps it alive only while a child runs, and kills
 * every child's group if atk dies.
 */
export function launch(file: string, args: readonly string[], options: LaunchOptions = {}): LaunchedProcess {
  const channel = launcherProcess();
  const id = nextId++;
  const post = (message: Record<string, unknown>): void => {
    if (channel.connected) channel.send(message);
  };
  const child = new LaunchedProcess(id, post, options.extraPipe === true);
  live.set(id, { child, via: channel });
  // Held while a child runs, as Node holds a ChildProcess; idle, the launcher never keeps atk alive.
  if (live.size === 1) channel.channel?.ref();
  const { extraPipe: _, ...spawnOptions } = options;
  // The environment of now: the launcher's own is a copy from when it started.
  const env = options.env ?? process.env;
  post({ t: 'spawn', id, file, args, options: { ...spawnOptions, env }, extraPipe: options.extraPipe === true });
  return child;
}

function launcherProcess(): ChildProcess {
  if (launcher?.connected) return launcher;
  const started = spawn(process.execPath, [LAUNCHER_SCRIPT], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    serialization: 'advanced',
  });
  started.unref();
  started.channel?.unref();
  const forget = (id: number): void => {
    live.delete(id);
    if (live.size === 0) started.channel?.unref();
  };
  started.on('message', (message: LauncherMessage) => {
    const entry = live.get(message.id);
    if (!entry) return;
    if (message.t === 'exit' || message.t === 'failed') forget(message.id);
    entry.child.deliver(message);
  });
  // A launcher that dies takes its children's reports with it: fail what was running, start afresh next time.
  started.on('exit', (code, signal) => {
    if (launcher === started) launcher = undefined;
    for (const [id, entry] of live) {
      if (entry.via !== started) continue;
      forget(id);
      entry.child.deliver({ t: 'failed', id, message: `atk's process launcher exited (${signal ?? code})` });
    }
  });
  launcher = started;
  return started;
}
