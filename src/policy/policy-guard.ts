/**
 * A running policy whose processes are watched for the whole run: once one ends or stops answering its
 * heartbeats, every trainer call and weight sync fails with that loss named, and `lost` rejects with it so
 * whatever waits on episodes (a step's collection, an eval) fails too, within seconds rather than at the
 * end of a step whose every episode failed.
 */
import type { ProviderError } from '../errors/index.js';
import { type Heartbeat, watchLiveness } from './liveness.js';

/** The parts of a running policy the guard wraps: the trainer's calls and the weight sync. */
export interface GuardablePolicy {
  readonly trainer: object;
  readonly sync: object;
  readonly facts: Readonly<Record<string, unknown>>;
  /** Rejects once a watched process is lost (set here). */
  readonly lost?: Promise<never>;
  close(): Promise<void>;
}

/** What the guard watches: processes that must not end, and the listeners that must keep answering. */
export interface PolicyWatch {
  /** The first watched process that ended before close(), as the error that fails the run. */
  failure(): ProviderError | undefined;
  readonly heartbeats: readonly Heartbeat[];
  /** Seconds between heartbeats, and unanswered ones in a row that make a component lost. */
  readonly intervalS: number;
  readonly misses: number;
  /** What to do about a component that stopped answering. */
  readonly hint: string;
  /** Called as close() starts: processes ending from then on are the policy being stopped, not lost. */
  readonly closing?: () => void;
  /**
   * How long a failed call waits for a lost process to be noticed, so the error names the loss rather than a
   * refused connection: seconds where the end of a placed process is learnt over the network, less on this machine.
   */
  readonly graceMs: number;
}

/** `policy` with its trainer calls and sync failing, and `lost` rejecting, once a watched process is lost. */
export function guardPolicy<P extends GuardablePolicy>(policy: P, watch: PolicyWatch): P {
  const liveness = watchLiveness({
    failure: () => watch.failure(),
    heartbeats: watch.heartbeats,
    intervalS: watch.intervalS,
    misses: watch.misses,
    hint: watch.hint,
  });
  const guard = async <R>(call: () => Promise<R>): Promise<R> => {
    const lost = watch.failure();
    if (lost) throw lost;
    try {
      // A call to a lost component may wait out its whole timeout (a hung node answers nothing): the loss ends it.
      return await Promise.race([call(), liveness.lost]);
    } catch (error) {
      for (
        const end = performance.now() + watch.graceMs;
        performance.now() < end;
        await new Promise((r) => setTimeout(r, 100))
      ) {
        const named = watch.failure();
        if (named) throw named;
      }
      throw error;
    }
  };
  return {
    ...policy,
    trainer: guardMethods(policy.trainer, guard),
    sync: guardMethods(policy.sync, guard),
    lost: liveness.lost,
    close: async () => {
      watch.closing?.();
      liveness.stop();
      await policy.close();
    },
  };
}

/** `target` with each of its methods run through `guard` (the trainer calls and sync are async). */
function guardMethods<T extends object>(target: T, guard: <R>(call: () => Promise<R>) => Promise<R>): T {
  return new Proxy(target, {
    get(object, key) {
      const value: unknown = Reflect.get(object, key);
      return typeof value === 'function'
        ? (...args: unknown[]) => guard(async () => (value as (...a: unknown[]) => unknown).apply(object, args))
        : value;
    },
  });
}
