/**
 * Bounded failure while nothing calls the policy's processes (the rollout phase waits on episodes, which
 * only fail one by one): a lost trainer or engine replica, on this machine or placed on a node, rejects
 * `lost` within about a second of its process ending, or after `misses` heartbeats in a row went
 * unanswered (a hung node, a stopped process, a network cut: cases where no process ends), naming the
 * component and where it runs.
 */
import { ProviderError } from '../errors/index.js';
import { probe } from '../util/http.js';

/** A placed listener atk sends heartbeats to: GET `<url><path>` must answer. */
export interface Heartbeat {
  /** `trainer` or `engine replica <i>`. */
  readonly component: string;
  /** Where it runs, for the message: `node n2 (slurm job 7)`, `host gpu3` or `this machine`. */
  readonly where: string;
  readonly url: string;
  readonly path: string;
}

export interface LivenessOptions {
  /** The first watched process that ended during the run, as the error naming it. */
  readonly failure: () => ProviderError | undefined;
  readonly heartbeats: readonly Heartbeat[];
  /** Seconds between heartbeats; default 10. Each waits at most 5 s for its answer. */
  readonly intervalS?: number;
  /** Unanswered heartbeats in a row that make a component lost; default 3. */
  readonly misses?: number;
  /** What to do about a component that stopped answering (the error's hint). */
  readonly hint: string;
}

export interface Liveness {
  /** Never resolves; rejects with the named failure once a component is lost. */
  readonly lost: Promise<never>;
  /** Ends the checks (the run is closing): `lost` stays pending. */
  stop(): void;
}

/** Watches the placed processes until stop(). */
export function watchLiveness(options: LivenessOptions): Liveness {
  const intervalMs = (options.intervalS ?? 10) * 1000;
  const allowed = options.misses ?? 3;
  const missed = options.heartbeats.map(() => 0);
  let stopped = false;
  let fail: (error: ProviderError) => void = () => undefined;
  const lost = new Promise<never>((_, reject) => {
    fail = (error) => {
      if (stopped) return;
      stopped = true;
      clearInterval(exits);
      clearInterval(beats);
      reject(error);
    };
  });
  lost.catch(() => undefined); // awaited by whoever races it; not an unhandled rejection when nobody does
  const exits = setInterval(() => {
    const failure = options.failure();
    if (failure) fail(failure);
  }, 1000).unref();
  let beating = false;
  const beats = setInterval(() => {
    if (beating) return; // the previous round still waits on a probe
    beating = true;
    void Promise.all(
      options.heartbeats.map(async (beat, i) => {
        missed[i] = (await probe(
          { name: beat.component, baseUrl: beat.url, timeoutMs: 5000, retries: 0, backoffMs: 0 },
          beat.path,
        ))
          ? 0
          : missed[i]! + 1;
      }),
    ).then(() => {
      beating = false;
      const failure = options.failure();
      if (failure) return fail(failure); // an ended process says more than its missing answers
      const i = missed.findIndex((n) => n >= allowed);
      if (i < 0) return;
      const beat = options.heartbeats[i]!;
      fail(
        new ProviderError(
          `${beat.component} on ${beat.where} answered none of ${allowed} heartbeats (GET ${beat.path}, ${intervalMs / 1000} s apart) during the run`,
          { hint: options.hint },
        ),
      );
    });
  }, intervalMs).unref();
  return {
    lost,
    stop() {
      stopped = true;
      clearInterval(exits);
      clearInterval(beats);
    },
  };
}
