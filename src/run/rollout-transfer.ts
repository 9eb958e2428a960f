import { ProviderError } from '../errors/index.js';
import type { Generation, ProtocolRequest, SamplingParams } from '../engines/types.js';
import { TokenTrajectory, type TrajectoryJSON } from '../tokens/trajectory.js';
import type { ChatMessage } from '../tokens/chat-types.js';
import type { ResolvedRecipe } from '../recipe/index.js';
import type { EpisodeRequest, Rollout } from '../rollout/collect.js';
import type { WaitComponent } from '../rollout/stall-watch.js';
import type { TokenizerOverrides } from '../tokens/index.js';

// What the run's thread and its rollout workers say to each other (rollout-workers.ts, the run's side;
// rollout-worker.ts, the worker). Episodes run in the workers; engine requests come back to the run's
// thread, which owns the engine client (routing, adapter names, sync gating, the served policy version)
// and hands the HTTP exchange itself back to the worker. A turn is three small messages: `generate`
// (the prompt's length, not its ids: the prompt stays where it is sent from), `exchange` (the request
// as routed and named, with the policy version serving it) and `exchanged` (the reply, which the worker
// already holds, so the episode goes on without waiting for the run thread again).

/** What a worker is started with (workerData). */
export interface RolloutWorkerSetup {
  readonly recipe: ResolvedRecipe;
  readonly recipeDir: string;
  readonly recipeFile: string;
  readonly runDir?: string;
  readonly modelDir: string;
  readonly tokenizer: TokenizerOverrides;
  readonly engine: { readonly kind: string; readonly baseUrl: string; readonly model: string };
}

/** From the run's thread to a worker. */
export type ToWorker =
  /** `watched`: report the episode's tool, user and reward waits (waitBegin, waitEnd). */
  | { readonly t: 'collect'; readonly id: number; readonly request: WorkerEpisodeRequest; readonly watched: boolean }
  | { readonly t: 'abort'; readonly id: number }
  | { readonly t: 'close' }
  /** Send the call's request as described: the run thread routed and named it, the worker holds the prompt. */
  /** `version`: the policy version the run served when the request reached it, stamped on the reply. */
  | { readonly t: 'exchange'; readonly call: number; readonly request: ProtocolRequest; readonly version: number }
  /** The run thread failed the call before handing its exchange over (routing, sync gating, a stall watch abort). */
  | { readonly t: 'generateFailed'; readonly call: number; readonly error: TransferredError };

/** From a worker to the run's thread. */
export type FromWorker =
  | { readonly t: 'ready' }
  | { readonly t: 'startFailed'; readonly error: TransferredError }
  | { readonly t: 'warn'; readonly message: string }
  | {
      readonly t: 'generate';
      readonly call: number;
      /** The episode whose agent asks (absent for the kit's own calls, e.g. a simulated user's). */
      readonly episode?: number;
      /** Prompt tokens (their ids stay on the worker, which sends the request). */
      readonly promptLength: number;
      readonly params: SamplingParams;
      /** generateN rather than generate. */
      readonly many: boolean;
    }
  | { readonly t: 'abortGenerate'; readonly call: number }
  | {
      readonly t: 'waitBegin';
      readonly episode: number;
      readonly wait: number;
      readonly component: WaitComponent;
      readonly detail: string;
    }
  /** `error`: the message the wait failed with. */
  | { readonly t: 'waitEnd'; readonly wait: number; readonly error?: string }
  | { readonly t: 'exchanged'; readonly call: number; readonly generations: Generation[] }
  | { readonly t: 'exchangeFailed'; readonly call: number; readonly error: TransferredError }
  | { readonly t: 'rollout'; readonly id: number; readonly rollout: TransferredRollout }
  | { readonly t: 'collectFailed'; readonly id: number; readonly error: TransferredError };

/** An EpisodeRequest without what cannot cross a thread: the signal (sent as `abort`) and a version function. */
export type WorkerEpisodeRequest = Omit<EpisodeRequest, 'signal' | 'policyVersion'> & {
  readonly policyVersion: number;
};

export interface TransferredError {
  readonly message: string;
  /** The class to rebuild on the other side; the rest arrive as plain errors. */
  readonly type: 'provider' | 'cancelled' | 'other';
}

type TransferredRollout = Omit<Rollout, 'episode'> & {
  readonly episode: Omit<Rollout['episode'], 'trajectory' | 'priorSegments'> & {
    readonly trajectory: TrajectoryJSON;
    readonly priorSegments?: readonly {
      readonly trajectory: TrajectoryJSON;
      readonly endedBecause: string;
      readonly messages?: readonly ChatMessage[];
    }[];
  };
};

/** A rollout in a form structured clone keeps whole (the trajectory is a class). */
export function packRollout(rollout: Rollout): TransferredRollout {
  const { trajectory, priorSegments, ...episode } = rollout.episode;
  return {
    ...rollout,
    episode: {
      ...episode,
      trajectory: trajectory.toJSON(),
      ...(priorSegments
        ? { priorSegments: priorSegments.map((s) => ({ ...s, trajectory: s.trajectory.toJSON() })) }
        : {}),
    },
  };
}

export function unpackRollout(packed: TransferredRollout): Rollout {
  const { trajectory, priorSegments, ...episode } = packed.episode;
  return {
    ...packed,
    episode: {
      ...episode,
      trajectory: TokenTrajectory.fromJSON(trajectory),
      ...(priorSegments
        ? { priorSegments: priorSegments.map((s) => ({ ...s, trajectory: TokenTrajectory.fromJSON(s.trajectory) })) }
        : {}),
    },
  };
}

export function packError(error: unknown, cancelled: boolean): TransferredError {
  return {
    message: error instanceof Error ? error.message : String(error),
    type: cancelled ? 'cancelled' : error instanceof ProviderError ? 'provider' : 'other',
  };
}

/** The error again, as the class the episode's failure handling recognises (an engine failure stays one). */
export function unpackError(error: TransferredError): Error {
  return error.type === 'provider' ? new ProviderError(error.message) : new Error(error.message);
}

/**
 * Replies awaited from the other thread, by id: `wait` settles with the reply (`resolve`, `reject`) or
 * with the signal's reason when it aborts first, and keeps `data` beside the id until then.
 */
export class AwaitedReplies<T, Data = undefined> {
  private readonly open = new Map<
    number,
    { readonly data: Data; resolve(value: T): void; reject(error: unknown): void }
  >();

  /** Awaits the reply `id`; `onAbort` runs when the signal ends the wait (to tell the other side). */
  wait(id: number, data: Data, signal: AbortSignal | undefined, onAbort?: () => void): Promise<T> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const aborted = (): void => {
        this.open.delete(id);
        onAbort?.();
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', aborted, { once: true });
      const done = (): void => {
        this.open.delete(id);
        signal?.removeEventListener('abort', aborted);
      };
      this.open.set(id, {
        data,
        resolve: (value) => {
          done();
          resolve(value);
        },
        reject: (error) => {
          done();
          reject(error);
        },
      });
    });
  }

  /** What `wait` kept for `id`, while it is awaited. */
  data(id: number): Data | undefined {
    return this.open.get(id)?.data;
  }

  resolve(id: number, value: T): void {
    this.open.get(id)?.resolve(value);
  }

  reject(id: number, error: unknown): void {
    this.open.get(id)?.reject(error);
  }
}
