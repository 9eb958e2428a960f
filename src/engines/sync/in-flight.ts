import type { Engine, Generation, SamplingParams } from '../types.js';

/**
 * What a weight sync needs to know about the requests rollouts have in flight, so it does not stop
 * the world: a LoRA adapter is unloaded only once every request sent to it has finished, and a
 * full-weight reload holds back new requests only while the weights are replaced.
 */
export interface RequestTracker {
  /** Resolves once no request sent under model name `model` is still running. */
  drained(model: string): Promise<void>;
  /** New requests wait until the returned function is called; requests already sent go on. */
  pause(): () => void;
}

/** An engine whose requests are counted per model name and can be held back: the engine rollouts use and the sync's tracker in one. */
export type TrackedEngine = Engine & RequestTracker;

/** Wraps `engine` so a sync can see and hold back its requests (see RequestTracker). */
export function trackRequests(engine: Engine): TrackedEngine {
  const running = new Map<string, number>();
  const waiters = new Map<string, (() => void)[]>();
  let paused: Promise<void> | undefined;

  async function tracked<T>(send: () => Promise<T>): Promise<T> {
    while (paused) await paused;
    const model = engine.model;
    running.set(model, (running.get(model) ?? 0) + 1);
    try {
      return await send();
    } finally {
      const left = running.get(model)! - 1;
      if (left > 0) running.set(model, left);
      else {
        running.delete(model);
        for (const wake of waiters.get(model) ?? []) wake();
        waiters.delete(model);
      }
    }
  }

  return {
    get kind() {
      return engine.kind;
    },
    get baseUrl() {
      return engine.baseUrl;
    },
    get model() {
      return engine.model;
    },
    generate: (promptIds: readonly number[], params: SamplingParams, signal?: AbortSignal): Promise<Generation> =>
      tracked(() => engine.generate(promptIds, params, signal)),
    generateN: (promptIds: readonly number[], params: SamplingParams, signal?: AbortSignal): Promise<Generation[]> =>
      tracked(() => engine.generateN(promptIds, params, signal)),
    health: () => engine.health(),
    models: () => engine.models(),
    setModel: (name) => engine.setModel(name),
    drained(model) {
      if (!running.has(model)) return Promise.resolve();
      return new Promise((resolve) => waiters.set(model, [...(waiters.get(model) ?? []), resolve]));
    },
    pause() {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      paused = gate;
      return () => {
        if (paused === gate) paused = undefined;
        release();
      };
    },
  };
}
