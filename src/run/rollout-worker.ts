/**
 * A rollout worker thread (`rollout.workers`): builds its own episode kit from the recipe (tools,
 * reward, prompts, tokenizer) and runs the episodes the run's thread sends it, so the CPU work of an
 * episode (the agent loop, rendering, tokenising, parsing, tools, reward) spreads over cores. Engine
 * requests go back to the run's thread, which owns the engine client and hands each one back to be
 * sent from here (the HTTP exchange and the reply's parsing run on this core too); the episode goes on
 * as soon as the reply is here.
 */
import { join } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { registerBuiltins } from '../builtins.js';
import { datasets } from '../datasets/index.js';
import type { Engine, Generation, SamplingParams } from '../engines/types.js';
import { CancelledError } from '../errors/index.js';
import { sendProtocolRequest } from '../engines/protocol-request.js';
import { startContextModel } from '../policy/context-model.js';
import { buildEpisodeKit } from './kit.js';
import { loadModelTokenizer } from '../tokens/index.js';
import { errorMessage } from '../agent/index.js';
import { collectRollout } from '../rollout/collect.js';
import { openWait, type WaitComponent, type WaitRecorder } from '../rollout/stall-watch.js';
import { watchedKit } from '../rollout/watched-kit.js';
import {
  AwaitedReplies,
  type FromWorker,
  packError,
  packRollout,
  type RolloutWorkerSetup,
  type ToWorker,
  unpackError,
} from './rollout-transfer.js';

const port = parentPort!;
const setup = workerData as RolloutWorkerSetup;
const post = (message: FromWorker): void => port.postMessage(message);

/** Engine requests sent to the run thread, with what their exchange needs. */
const engineCalls = new AwaitedReplies<
  Generation[],
  { readonly promptIds: readonly number[]; readonly signal: AbortSignal | undefined }
>();
const episodes = new Map<number, AbortController>();
let nextCall = 0;

/** The engine as an episode (or, without one, the kit) sees it: each request is made by the run's thread. */
function engineThroughRunThread(episode?: number): Engine {
  const request = (
    promptIds: readonly number[],
    params: SamplingParams,
    signal: AbortSignal | undefined,
    many: boolean,
  ): Promise<Generation[]> => {
    const call = nextCall++;
    const reply = engineCalls.wait(call, { promptIds, signal }, signal, () => post({ t: 'abortGenerate', call }));
    if (!signal?.aborted)
      post({
        t: 'generate',
        call,
        promptLength: promptIds.length,
        params,
        many,
        ...(episode === undefined ? {} : { episode }),
      });
    return reply;
  };
  const unavailable = (what: string): never => {
    throw new Error(`${what} is not available inside a rollout worker`);
  };
  return {
    ...setup.engine,
    generate: async (promptIds, params, signal) => (await request(promptIds, params, signal, false))[0]!,
    generateN: (promptIds, params, signal) => request(promptIds, params, signal, true),
    health: async () => true,
    models: async () => unavailable('engine.models()'),
    setModel: () => unavailable('engine.setModel()'),
  };
}

let nextWait = 0;

/** Waits of `episode` registered in the run thread's stall watch (its collector's `waits`). */
function waitsOnRunThread(episode: number): WaitRecorder {
  const begin = (component: WaitComponent, detail: string): ((error?: unknown) => void) => {
    const wait = nextWait++;
    post({ t: 'waitBegin', episode, wait, component, detail });
    let open = true;
    return (error) => {
      if (!open) return;
      open = false;
      post({ t: 'waitEnd', wait, ...(error === undefined ? {} : { error: errorMessage(error) }) });
    };
  };
  return { begin, wait: (component, detail, work) => openWait(begin, component, detail, work) };
}

async function start(): Promise<void> {
  registerBuiltins();
  const { recipe } = setup;
  const kit = await buildEpisodeKit({
    recipe,
    recipeDir: setup.recipeDir,
    recipeFile: setup.recipeFile,
    ...(setup.runDir ? { runDir: setup.runDir } : {}),
    dataset: await datasets.get(recipe.dataset.name),
    engine: engineThroughRunThread(),
    tokenizer: await loadModelTokenizer(setup.modelDir, setup.tokenizer),
    // Only a url summariser gets here (the recipe check refuses one each worker would launch): a client of its own.
    startContextModel: () =>
      startContextModel({
        recipe,
        recipeDir: setup.recipeDir,
        logsDir: join(setup.runDir ?? setup.recipeDir, 'logs'),
        runDir: setup.runDir ?? setup.recipeDir,
      }),
    warn: (message) => post({ t: 'warn', message }),
  });
  port.on('message', (message: ToWorker) => {
    switch (message.t) {
      case 'collect': {
        const abort = new AbortController();
        episodes.set(message.id, abort);
        // The run's thread makes this episode's engine requests with the engine its collector gave, and
        // registers them as waits there; the rest of the episode's waits are reported to it from here.
        const engine = engineThroughRunThread(message.id);
        const episodeKit = message.watched
          ? { ...watchedKit(kit, waitsOnRunThread(message.id)), engine }
          : { ...kit, engine };
        collectRollout(episodeKit, { ...message.request, signal: abort.signal })
          .then(
            (rollout) => post({ t: 'rollout', id: message.id, rollout: packRollout(rollout) }),
            (error: unknown) =>
              post({ t: 'collectFailed', id: message.id, error: packError(error, error instanceof CancelledError) }),
          )
          .finally(() => episodes.delete(message.id));
        return;
      }
      case 'abort':
        episodes.get(message.id)?.abort(new CancelledError('the episode was cancelled'));
        return;
      case 'exchange': {
        // The run thread routed and named the request; it is sent from here, where the prompt is.
        const pending = engineCalls.data(message.call);
        if (!pending) return; // the episode stopped waiting, and the run thread was told so
        const { call, version } = message;
        sendProtocolRequest(message.request, pending.promptIds, pending.signal).then(
          (generations) => {
            // The run thread's layers finish the call with the reply; the episode needs not wait for them.
            post({ t: 'exchanged', call, generations });
            engineCalls.resolve(
              call,
              generations.map((g) => ({ ...g, policyVersion: version })),
            );
          },
          (error: unknown) => {
            const aborted = pending.signal?.aborted ?? false;
            post({ t: 'exchangeFailed', call, error: packError(error, aborted) });
            engineCalls.reject(call, error);
          },
        );
        return;
      }
      case 'generateFailed':
        engineCalls.reject(message.call, unpackError(message.error));
        return;
      case 'close':
        // The kit stops what its tools started (MCP servers) before the thread ends.
        void kit.close?.().finally(() => process.exit(0));
    }
  });
  post({ t: 'ready' });
}

start().catch((error: unknown) => post({ t: 'startFailed', error: packError(error, false) }));
