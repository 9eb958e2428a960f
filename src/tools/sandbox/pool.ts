import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { AtkError } from '../../errors/index.js';
import { defaultPython, findExecutable, sandboxCapabilities, slotUid } from './capabilities.js';
import { runProgram, type SandboxHost } from './run.js';
import type { SandboxRequest, SandboxResult } from './types.js';

/** Options of a sandbox pool. */
export interface SandboxPoolOptions {
  /** Programs running at once; default: the number of CPU cores. Independent of rollout concurrency. */
  readonly size?: number;
  /** Interpreter for the programs; default $ATK_SANDBOX_PYTHON, else /usr/bin/python3. */
  readonly python?: string;
  /** bwrap binary; default $ATK_BWRAP, else bwrap on the PATH. A path that does not exist forces the rlimits-only fallback. */
  readonly bwrap?: string;
}

/** Told once per pool when programs will run without namespaces (rlimits only). */
export type SandboxWarningListener = (message: string) => void;

let nextSlot = 0;

/**
 * A bounded pool of sandbox slots. Runs beyond `size` wait in FIFO order, so many episodes
 * testing code at once cannot starve the agent loop of CPU. Each slot has its own uid when
 * atk runs as root (see `slotUid`).
 */
export class SandboxPool {
  readonly size: number;
  /** The slot numbers this pool runs programs in; `slotUid(id)` is the uid of each when atk is root. */
  readonly slotIds: readonly number[];
  private readonly python: string;
  private readonly bwrap: string | undefined;
  private readonly freeSlots: number[] = [];
  private readonly waiting: Array<(slot: number) => void> = [];
  private readonly listeners = new Set<SandboxWarningListener>();
  private readonly warnings: string[] = [];
  private host: Promise<SandboxHost> | undefined;

  constructor(options: SandboxPoolOptions = {}) {
    this.size = Math.max(1, Math.min(128, options.size ?? availableParallelism()));
    this.python = options.python ?? defaultPython();
    this.bwrap = options.bwrap ?? process.env.ATK_BWRAP;
    for (let i = 0; i < this.size; i++) this.freeSlots.push(nextSlot++ % 128);
    this.slotIds = [...this.freeSlots];
  }

  /** Adds a listener for the fallback warning; it also hears a warning already given. */
  onWarning(listener: SandboxWarningListener): void {
    if (this.listeners.has(listener)) return;
    this.listeners.add(listener);
    for (const message of this.warnings) listener(message);
  }

  /**
   * Runs one program when a slot is free.
   * @throws AtkError when no sandbox can be started at all (prlimit missing).
   */
  async run(request: SandboxRequest): Promise<SandboxResult> {
    const host = await this.resolveHost();
    const slot = await this.acquire();
    try {
      return await runProgram(request, host, { uid: slotUid(slot) });
    } finally {
      this.release(slot);
    }
  }

  private resolveHost(): Promise<SandboxHost> {
    this.host ??= this.probe();
    return this.host;
  }

  private async probe(): Promise<SandboxHost> {
    const prlimit = findExecutable('prlimit');
    if (!prlimit)
      throw new AtkError('E_SANDBOX', 'prlimit not found: model-written code cannot be limited', 1, {
        hint: 'install util-linux (it provides prlimit)',
      });
    const caps = await sandboxCapabilities({ python: this.python, bwrap: this.bwrap });
    const bwrap = findExecutable('bwrap', this.bwrap);
    if (caps.namespaces && bwrap) return { isolation: 'bwrap', bwrap, prlimit, python: this.python };
    this.warn(
      `SANDBOX WARNING: model-written code runs WITHOUT isolation (rlimits only): it can read your files and use the network. ${caps.detail}`,
    );
    return { isolation: 'rlimits', bwrap: '', prlimit, python: this.python };
  }

  private warn(message: string): void {
    this.warnings.push(message);
    for (const listener of this.listeners) listener(message);
  }

  private acquire(): Promise<number> {
    const slot = this.freeSlots.pop();
    if (slot !== undefined) return Promise.resolve(slot);
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private release(slot: number): void {
    const next = this.waiting.shift();
    if (next) next(slot);
    else this.freeSlots.push(slot);
  }
}

/**
 * The `sandbox_pool_size` option of every component that runs programs through the shared pool (the
 * `run_python` tool, the `code_tests` reward): whichever builds the pool first sets its size.
 */
export const sandboxPoolSizeOption = z
  .number()
  .int()
  .positive()
  .optional()
  .describe('Sandboxed programs at once across the run; default the number of cores.');

let shared: SandboxPool | undefined;

/**
 * The process-wide pool the `run_python` tool and the `code_tests` reward share, so their
 * programs together never exceed one bound. The first caller's options fix its size.
 */
export function sharedSandboxPool(options: SandboxPoolOptions = {}): SandboxPool {
  shared ??= new SandboxPool(options);
  return shared;
}

/** Runs one program in the shared pool. */
export function runSandboxed(request: SandboxRequest): Promise<SandboxResult> {
  return sharedSandboxPool().run(request);
}
