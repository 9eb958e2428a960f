import { fileURLToPath } from 'node:url';
import type { EventLoopUtilization } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { policyVersionNow } from '../agent/policy-clock.js';
import type { Engine, Generation, ProtocolRequest } from '../engines/types.js';
import { CancelledError } from '../errors/index.js';
import { engineKindOf } from '../policy/index.js';
import type { RecipeProblem } from '../recipe/checks.js';
import type { ResolvedRecipe } from '../recipe/resolve.js';
import type { Rollout, RolloutWorkers } from '../rollout/collect.js';
import type { WaitRecorder } from '../rollout/stall-watch.js';
import {
  AwaitedReplies,
  type FromWorker,
  packError,
  type RolloutWorkerSetup,
  type ToWorker,
  unpackError,
  unpackRollout,
} from './rollout-transfer.js';

export interface RolloutWorkersOptions {
  readonly count: number;
  readonly setup: Omit<RolloutWorkerSetup, 'engine'>;
  /**
   * The run's engine client: every episode's engine request goes through it on this thread (stall watch,
   * sync gating, routing, adapter names); the worker that asked sends the HTTP request it describes.
   */
  readonly engine: Engine;
  /** Relays each worker's kit warnings (the same the run's own kit gives, so usually repeats). */
  readonly warn: (message: string) => void;
}

const here = fileURLToPath(import.meta.url);
// From source (tests, tsx) the worker is TypeScript and needs tsx's loader; built, it is plain JS.
const WORKER_ENTRY = here.replace(/rollout-workers\.(ts|js)$/, (_, ext: string) => `rollout-worker.${ext}`);
const WORKER_EXEC_ARGV = here.endsWith('.ts')
  ? [...process.execArgv, '--import', fileURLToPath(import.meta.resolve('tsx'))]
  : process.execArgv;

interface Running {
  readonly resolve: (rollout: Rollout) => void;
  readonly reject: (error: unknown) => void;
  readonly engine: Engine;
  readonly waits: WaitRecorder | undefined;
}

/** One worker thread and what it is doing. */
class RolloutWorker {
  readonly episodes = new Map<number, Running>();
  private readonly engineCalls = new Map<number, AbortController>();
  /** Open waits of this worker's episodes (tool calls, user turns, rewards), by the worker's wait id. */
  private readonly waits = new Map<number, (error?: unknown) => void>();
  /** HTTP exchanges handed to the worker, by call. */
  private readonly exchanges = new AwaitedReplies<Generation[]>();
  readonly thread: Worker;
  readonly ready: Promise<void>;
  exited = false;

  constructor(
    private readonly options: RolloutWorkersOptions,
    private readonly servedVersion: () => number,
  ) {
    const { engine } = options;
    this.thread = new Worker(WORKER_ENTRY, {
      workerData: {
        ...options.setup,
        engine: { kind: engine.kind, baseUrl: engine.baseUrl, model: engine.model },
      } satisfies RolloutWorkerSetup,
      execArgv: WORKER_EXEC_ARGV,
    });
    this.ready = new Promise((resolve, reject) => {
      this.thread.on('message', (message: FromWorker) => {
        if (message.t === 'ready') resolve();
        else if (message.t === 'startFailed') reject(unpackError(message.error));
        else this.receive(message);
      });
      let crash = '';
      // An uncaught error ends the worker (its 'exit' follows); unheard, it would end the run.
      this.thread.on('error', (error) => void (crash = `: ${error.message.split('\n')[0]}`));
      this.thread.once('exit', (code) => {
        this.exited = true;
        const why = new Error(`rollout worker exited with code ${code}${crash}`);
        reject(why);
        for (const running of this.episodes.values()) running.reject(why);
        this.episodes.clear();
        for (const call of this.engineCalls.values()) call.abort(why);
        for (const end of this.waits.values()) end(why);
        this.waits.clear();
      });
    });
    this.ready.catch(() => undefined);
  }

  post(message: ToWorker): void {
    if (!this.exited) this.thread.postMessage(message);
  }

  private receive(message: FromWorker): void {
    switch (message.t) {
      case 'warn':
        this.options.warn(message.message);
        return;
      case 'generate':
        this.generate(message, this.episodes.get(message.episode ?? -1)?.engine ?? this.options.engine);
        return;
      case 'abortGenerate':
        this.engineCalls.get(message.call)?.abort(new CancelledError('the episode stopped waiting'));
        return;
      case 'waitBegin': {
        const end = this.episodes.get(message.episode)?.waits?.begin(message.component, message.detail);
        if (end) this.waits.set(message.wait, end);
        return;
      }
      case 'waitEnd':
        this.waits.get(message.wait)?.(message.error === undefined ? undefined : new Error(message.error));
        this.waits.delete(message.wait);
        return;
      case 'exchanged':
        this.exchanges.resolve(message.call, message.generations);
        return;
      case 'exchangeFailed':
        this.exchanges.reject(message.call, unpackError(message.error));
        return;
      case 'rollout':
      case 'collectFailed': {
        const running = this.episodes.get(message.id);
        this.episodes.delete(message.id);
        if (message.t === 'rollout') running?.resolve(unpackRollout(message.rollout));
        else
          running?.reject(
            message.error.type === 'cancelled' ? new CancelledError(message.error.message) : unpackError(message.error),
          );
      }
    }
  }

  private generate({ call, promptLength, params, many }: Extract<FromWorker, { t: 'generate' }>, engine: Engine): void {
    const abort = new AbortController();
    this.engineCalls.set(call, abort);
    // Read when the request is sent, as the built-in agent reads it: a sync during generation does not change who sampled.
    const version = this.servedVersion();
    let exchanged = false;
    const routed = {
      ...params,
      exchange: (request: ProtocolRequest, signal: AbortSignal | undefined) => {
        exchanged = true;
        return this.exchange(call, request, version, signal ?? abort.signal);
      },
    };
    // The layers here (stall watch, sync gating, routing, the adapter name) read the prompt's length at
    // most; its ids stay on the worker, which sends the request the protocol client describes.
    const prompt = new Array<number>(promptLength);
    const request = (
      many
        ? engine.generateN(prompt, routed, abort.signal)
        : engine.generate(prompt, routed, abort.signal).then((g): Generation[] => [g])
    ).then((generations) => {
      if (!exchanged)
        throw new Error(`the ${engine.kind} engine client answered without handing its request to the worker`);
      return generations;
    });
    request.then(
      () => undefined,
      (error: unknown) => {
        // After the exchange the worker has its reply (or its failure) already.
        if (!exchanged) this.post({ t: 'generateFailed', call, error: packError(error, abort.signal.aborted) });
      },
    );
    request.finally(() => this.engineCalls.delete(call)).catch(() => undefined);
  }

  /**
   * Has the worker send `request` (it holds the prompt): the HTTP, JSON and reply checks of every turn
   * run on the worker's core, and the run thread only routes, names and tracks the call.
   */
  private exchange(
    call: number,
    request: ProtocolRequest,
    version: number,
    signal: AbortSignal,
  ): Promise<Generation[]> {
    const reply = this.exchanges.wait(call, undefined, signal);
    this.post({ t: 'exchange', call, request, version });
    return reply;
  }
}

/** The pool `startRolloutWorkers` starts: rollout workers whose event loops can be read. */
export interface RolloutWorkerPool extends RolloutWorkers {
  /** Each worker's event-loop time so far, busy and idle (`performance.eventLoopUtilization`'s fields). */
  eventLoops(): EventLoopUtilization[];
}

/**
 * Starts `count` rollout workers and waits until each has built its kit.
 * @throws the first worker's start-up error (a tool or reward that cannot be built there).
 */
export async function startRolloutWorkers(options: RolloutWorkersOptions): Promise<RolloutWorkerPool> {
  let served = (): number => 0;
  const spawn = (): RolloutWorker => new RolloutWorker(options, () => served());
  const workers = Array.from({ length: options.count }, spawn);
  try {
    await Promise.all(workers.map((w) => w.ready));
  } catch (error) {
    await Promise.all(workers.map((w) => w.thread.terminate()));
    throw error;
  }
  let nextId = 0;
  return {
    async collect(request, engine = options.engine, waits) {
      const { signal, policyVersion, ...rest } = request;
      if (typeof policyVersion === 'function') served = policyVersion;
      // A worker that died is replaced; its episodes already failed.
      for (const [i, w] of workers.entries()) if (w.exited) workers[i] = spawn();
      // The episode is counted on its worker before anything is awaited: a step's episodes arrive in one
      // burst, and counted only once `ready` had settled, the whole burst went to the first worker.
      const worker = workers.reduce((a, b) => (b.episodes.size < a.episodes.size ? b : a));
      const id = nextId++;
      const rollout = new Promise<Rollout>((resolve, reject) =>
        worker.episodes.set(id, { resolve, reject, engine, waits }),
      );
      // Awaited below; a worker that dies while this waits for it rejects it sooner.
      rollout.catch(() => undefined);
      try {
        await worker.ready;
        if (signal?.aborted) throw signal.reason ?? new CancelledError();
      } catch (error) {
        worker.episodes.delete(id);
        throw error;
      }
      const onAbort = (): void => worker.post({ t: 'abort', id });
      signal?.addEventListener('abort', onAbort, { once: true });
      worker.post({
        t: 'collect',
        id,
        request: { ...rest, policyVersion: policyVersionNow(policyVersion) },
        watched: waits !== undefined,
      });
      try {
        return await rollout;
      } catch (error) {
        // As on the run's thread, a cancelled episode rejects with the signal's reason.
        throw signal?.aborted ? (signal.reason ?? error) : error;
      } finally {
        signal?.removeEventListener('abort', onAbort);
      }
    },
    eventLoops: () => workers.map((w) => w.thread.performance.eventLoopUtilization()),
    async close() {
      await Promise.all(
        workers.map(async (w) => {
          if (w.exited) return;
          w.post({ t: 'close' });
          const exited = new Promise((resolve) => w.thread.once('exit', resolve));
          // A kit that does not close in time is cut off with its thread.
          const timer = setTimeout(() => void w.thread.terminate(), 10_000);
          await exited;
          clearTimeout(timer);
        }),
      );
    },
  };
}

/**
 * Refuses `rollout.workers` beside what each worker would start a copy of: a simulated user on an
 * engine atk launches (a second vLLM or SGLang per worker, on the same GPUs).
 */
export function rolloutWorkerProblems(recipe: ResolvedRecipe): RecipeProblem[] {
  const userEngine = recipe.user?.kind === 'engine' ? recipe.user.engine : undefined;
  if (recipe.rollout.workers === 0 || userEngine === undefined || !engineKindOf(userEngine).launched) return [];
  return [
    {
      path: 'rollout.workers',
      message: `each rollout worker would launch its own ${userEngine.kind} engine for the simulated user; attach one by URL (user.engine.kind: url) or set rollout.workers: 0`,
    },
  ];
}
