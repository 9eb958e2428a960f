/**
 * Bounded failure while nothing calls the placed processes (the rollout phase waits on episodes, which
 * only fail one by one): a lost trainer or engine replica rejects `lost` within about a second of its
 * process ending, or after `misses` heartbeats in a row went unanswered (a hung node, a stopped process,
 * a network cut: cases where no process ends), naming the component and its node.
 */
import { ProviderError } from '../errors/index.js';
import { probe } from '../util/http.js';

/** A placed listener atk sends heartbeats to: GET `<url><path>` must answer. */
export interface Heartbeat {
  /** `trainer` or `engine replica <i>`. */
  readonly component: string;
  /** Where it runs, for the message: `node n2 (slurm job 7)` or `host gpu3`. */
  readonly where: string;
  readonly url: string;
  readonly path: string;
}

export interface LivenessOptions {
  /** The first placed process that ended during the run, as the error naming it (ClusterLaunch.failure). */
  readonly failure: () => ProviderError | undefined;
  readonly heartbeats: readonly Heartbeat[];
  /** Seconds between heartbeats; default 10. Each waits at most 5 s for its answer. */
  readonly intervalS?: number;
  /** Unanswered heartbeats in a row that make a component lost; default 3. */
  readonly misses?: number;
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
          {
            hint: 'the node hangs, its process is stopped or the network to it is cut; atk run --resume continues from the last checkpoint, also on a new allocation',
          },
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
