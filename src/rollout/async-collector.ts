/**
 * Collects the episodes of each training step, up to `maxStaleness` steps ahead of the step that
 * trains (asynchronous rollouts): while step s trains, steps s+1..s+k are already being collected
 * from the policy the engine serves. With `maxStaleness` 0 nothing runs ahead and a step is
 * collected when the loop asks for it, the synchronous loop exactly.
 *
 * All steps share one pool of `concurrency` episode slots, handed out first come first served, so
 * the engine never runs more episodes than the recipe allows and an earlier step's episodes start
 * before a later step's.
 */
import type { Rollout } from './collect.js';

/** Runs one episode inside the shared pool of slots. */
export type EpisodeGate = <R>(runEpisode: (signal: AbortSignal) => Promise<R>) => Promise<R>;

export interface StepCollectorOptions<T = Rollout[][]> {
  /** Collects one step's groups (or what holds them), running each episode through `gate` (which also supplies the episode's abort signal). */
  readonly collect: (step: number, gate: EpisodeGate) => Promise<T>;
  readonly maxStaleness: number;
  /** The run's last step: nothing is collected past it. */
  readonly lastStep: number;
  readonly concurrency: number;
  /** The run's signal; closing the collector also aborts what it started. */
  readonly signal: AbortSignal;
}

/** What a step collector did, for the step's metrics. */
export interface CollectorActivity {
  /** Seconds with at least one episode running, since the last call. */
  readonly busySeconds: number;
}

export interface StepCollector<T = Rollout[][]> {
  /** The step's groups once all its episodes have finished (its collection starts now unless it ran ahead). */
  take(step: number): Promise<T>;
  /** Starts collecting the steps after `step`, up to `step + maxStaleness`; called just before `step` trains. */
  runAhead(step: number): void;
  /**
   * Starts collecting `step` now, whatever `maxStaleness`: for work that reads the weights the step samples
   * from anyway (the eval before training), so the engine fills one batch from both instead of running them in turn.
   */
  begin(step: number): void;
  /** Runs an episode of other work (that eval) in the same pool of slots, so both together stay within `concurrency`. */
  readonly share: EpisodeGate;
  /** Engine-side activity since the last call. */
  activity(): CollectorActivity;
  /**
   * Aborts every collection not yet taken and waits for it to stop; returns how many episodes they had
   * started (finished or in flight), all discarded.
   */
  close(): Promise<number>;
}

/** A step collector over `options.collect`. */
export function stepCollector<T = Rollout[][]>(options: StepCollectorOptions<T>): StepCollector<T> {
  const abort = new AbortController();
  const stopOnRunAbort = (): void => abort.abort(options.signal.reason);
  options.signal.addEventListener('abort', stopOnRunAbort, { once: true });
  const slots = slotPool(options.concurrency);
  const busy = busyClock();
  const pending = new Map<number, { readonly groups: Promise<T>; started: number }>();

  /** Runs an episode in a slot of the pool; `onStart` once it has one. */
  async function inPool<R>(runEpisode: (signal: AbortSignal) => Promise<R>, onStart?: () => void): Promise<R> {
    await slots.acquire();
    if (abort.signal.aborted) {
      // A slot freed by a cancelled episode: the next one in line must not start.
      slots.release();
      throw abort.signal.reason;
    }
    onStart?.();
    busy.enter();
    try {
      return await runEpisode(abort.signal);
    } finally {
      busy.leave();
      slots.release();
    }
  }

  function start(step: number): void {
    if (pending.has(step) || step > options.lastStep || abort.signal.aborted) return;
    const entry = { groups: undefined as unknown as Promise<T>, started: 0 };
    const gate: EpisodeGate = (runEpisode) => inPool(runEpisode, () => entry.started++);
    entry.groups = options.collect(step, gate);
    // A collection that runs ahead and fails (cancelled at close) is reported by take or close, never as unhandled.
    entry.groups.catch(() => undefined);
    pending.set(step, entry);
  }

  return {
    async take(step) {
      start(step);
      const entry = pending.get(step);
      if (!entry) throw new Error(`step ${step} is past the run's last step ${options.lastStep}`);
      try {
        return await entry.groups;
      } finally {
        pending.delete(step);
      }
    },
    runAhead(step) {
      for (let ahead = step + 1; ahead <= step + options.maxStaleness; ahead++) start(ahead);
    },
    begin: start,
    share: (runEpisode) => inPool(runEpisode),
    activity() {
      return { busySeconds: busy.take() };
    },
    async close() {
      options.signal.removeEventListener('abort', stopOnRunAbort);
      abort.abort(new Error('collector closed'));
      const left = [...pending.values()];
      pending.clear();
      await Promise.allSettled(left.map((entry) => entry.groups));
      return left.reduce((sum, entry) => sum + entry.started, 0);
    },
  };
}

/** A counting semaphore whose waiters are served in arrival order. */
function slotPool(size: number): { acquire(): Promise<void>; release(): void } {
  let free = size;
  const waiting: (() => void)[] = [];
  return {
    acquire() {
      if (free > 0) {
        free--;
        return Promise.resolve();
      }
      return new Promise((resolve) => waiting.push(resolve));
    },
    release() {
      const next = waiting.shift();
      if (next) next();
      else free++;
    },
  };
}

/** Wall time during which at least one episode ran, accumulated between `take` calls. */
function busyClock(): { enter(): void; leave(): void; take(): number } {
  let running = 0;
  let since = 0;
  let busyMs = 0;
  return {
    enter() {
      if (running++ === 0) since = performance.now();
    },
    leave() {
      if (--running === 0) busyMs += performance.now() - since;
    },
    take() {
      const now = performance.now();
      const total = busyMs + (running > 0 ? now - since : 0);
      busyMs = 0;
      if (running > 0) since = now;
      return total / 1000;
    },
  };
}
