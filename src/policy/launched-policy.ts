import type { Engine } from '../engines/index.js';
import { rolloutTimeoutsMs } from './rollout-timeouts.js';
import {
  judgeEngineVersion,
  launchEngines,
  runningEngineVersion,
  servedWeightDtype,
  type EngineStartProgress,
  type LaunchedEngines,
} from '../engines/launch/index.js';
import { createEngineSync, trackRequests } from '../engines/sync/index.js';
import { engineUrls, urlEngines } from '../engines/url-engines.js';
import { ProviderError } from '../errors/index.js';
import { launchTrainer, type LoadModelResponse, type TrainerProcess } from '../trainer/index.js';
import { localModelDir } from '../util/hub-cache.js';
import { loadModelRequest, trainerCalls, trainerFacts, trainerLaunchOptions } from './trainer-start.js';
import type { EngineKindDefinition, EngineProtocol } from './engine-kind.js';
import type { PolicyPlacement, RunningPolicy, StartPolicyOptions } from './policy.js';
import { fullWeightSyncOver } from './weight-sync-mode.js';
import { syncProbeFor, type SyncProbe } from './sync-probe.js';
import { guardLocalPolicy, trainerListener } from './local-watch.js';

/** What the launched policy asks of its engine kind: whether to launch replicas, and the protocol to speak. */
export type LaunchedKind = Pick<EngineKindDefinition, 'name' | 'launched' | 'syncProtocol'>;

/**
 * Launches the trainer and the engine replicas side by side, checks the engine's version, loads the
 * policy into the trainer, and returns the router over the replicas with a weight sync that reaches all
 * of them. On resume, `trainer.load` also pushes the checkpoint's policy into the engines.
 * @throws EngineStartError/ProviderError when an engine does not start or its version cannot serve the
 * recipe; TrainerError when the trainer cannot start or load the model. Whatever started is stopped first.
 */
export async function startLaunchedPolicy(options: StartPolicyOptions, kind: LaunchedKind): Promise<RunningPolicy> {
  const { recipe } = options;
  const { engine: config, trainer: trainerConfig } = recipe.model;
  const protocol = kind.syncProtocol(config);
  if (protocol === undefined)
    throw new ProviderError(`startLaunchedPolicy: the ${kind.name} engine syncs no weights; it is not a launched one`);
  const lora = recipe.algorithm.lora;
  const modelDir = localModelDir(recipe.model.path);
  const cluster = await options.place?.(recipe);
  const [trainerStart, enginesStart] = await Promise.allSettled([
    launchTrainer({ ...trainerLaunchOptions(recipe, options), ...cluster?.trainer }),
    kind.launched
      ? launchEngines({
          kind: protocol,
          config,
          model: modelDir,
          ...(lora ? { lora: { rank: lora.rank, targetModules: lora.target_modules } } : {}),
          seed: recipe.seed,
          ...(trainerConfig.python ? { python: trainerConfig.python } : {}),
          logsDir: options.logsDir,
          requestTimeoutMs: rolloutTimeoutsMs(recipe.rollout).request,
          cwd: options.runDir,
          ...(options.onEngineProgress ? { onProgress: options.onEngineProgress } : {}),
          ...(options.signal ? { signal: options.signal } : {}),
          ...(cluster ? { place: (replica: number) => cluster.place(replica) } : {}),
        })
      : Promise.resolve(undefined),
  ]);
  const trainerProcess = trainerStart.status === 'fulfilled' ? trainerStart.value : undefined;
  const engines = enginesStart.status === 'fulfilled' ? enginesStart.value : undefined;
  const stopAll = async (): Promise<void> => {
    await cluster?.close();
    await Promise.all([engines?.stop(), trainerProcess?.stop()]);
  };
  try {
    if (trainerStart.status === 'rejected') throw trainerStart.reason;
    if (enginesStart.status === 'rejected') throw enginesStart.reason;
    const policy = await assemble(options, protocol, modelDir, trainerStart.value, engines, stopAll, cluster);
    if (cluster) return cluster.guard(policy, trainerStart.value, engines?.processes ?? []);
    const replicas = engines?.processes ?? [];
    return guardLocalPolicy(
      policy,
      [
        ...replicas.map((p, i) => ({
          component: `${kind.name} engine${replicas.length > 1 ? ` replica ${i}` : ''}`,
          logFile: p.logFile,
          exited: p.exited,
          baseUrl: p.baseUrl,
          healthPath: '/health',
        })),
        trainerListener(trainerStart.value, 'trainer'),
      ],
      recipe.cluster,
    );
  } catch (error) {
    await stopAll();
    throw error;
  }
}

async function assemble(
  options: StartPolicyOptions,
  protocol: EngineProtocol,
  modelDir: string,
  trainerProcess: TrainerProcess,
  engines: LaunchedEngines | undefined,
  stopAll: () => Promise<void>,
  cluster?: PolicyPlacement,
): Promise<RunningPolicy> {
  const { recipe } = options;
  const config = recipe.model.engine;
  const lora = recipe.algorithm.lora;
  // A url engine is asked its version too: it must speak the API atk's clients and sync were written for.
  const urls = engineUrls(config);
  const version = engines ? engines.version : await runningEngineVersion(protocol, urls[0] ?? '');
  const verdict = judgeEngineVersion(protocol, version);
  if (verdict.status === 'too-old')
    throw new ProviderError(verdict.message, { hint: 'upgrade the engine; atk doctor shows the supported range' });
  // A launched or running server's requests keep the base limits (rollout-timeouts.ts scales only the embedded engine).
  const requestTimeoutMs = rolloutTimeoutsMs(recipe.rollout).request;
  const served: Engine = engines?.engine ?? urlEngines(urls, protocol, requestTimeoutMs);
  // Rollouts collected ahead run during syncs: the sync then works around their requests instead of after them.
  const tracked = recipe.rollout.max_staleness > 0 ? trackRequests(served) : undefined;
  const engine: Engine = tracked ?? served;
  const client = trainerProcess.client;
  // A server atk did not launch serves a dtype atk cannot read from its command line.
  const syncDtype = engines ? servedWeightDtype(config.args, modelDir) : undefined;
  const fullSync = fullWeightSyncOver(recipe, protocol);
  const replicaUrls = engines ? engines.processes.map((p) => p.baseUrl) : urls;
  // Made once the trainer says where it loaded the model (its device sets the probe's tolerance).
  let probe: SyncProbe | undefined;
  const sync = createEngineSync({
    mode: lora ? 'lora' : 'full',
    protocol,
    engine,
    ...(tracked ? { requests: tracked } : {}),
    replicaUrls,
    // Weights only, in the dtype the engine serves: the optimizer state (twice the weights) is for resuming,
    // which kept checkpoints do, and fp32 weights would be rounded by the engine anyway.
    timeoutMs: config.sync_timeout_s * 1000,
    writePolicy: async (dir) => void (await client.save(dir, { weightsOnly: true, dtype: syncDtype })),
    ...(cluster?.stage ? { stage: cluster.stage } : {}),
    ...(fullSync === 'broadcast'
      ? {
          broadcast: {
            sender: client.weights,
            masterAddr: new URL(client.baseUrl).hostname,
            dtype: syncDtype,
            timeoutS: config.sync_timeout_s,
          },
        }
      : {}),
    verify: (policyVersion, model) => probe!.verify(policyVersion, model),
  });
  // Before the trainer loads the model (minutes for a large one): an engine that cannot take the sync fails now.
  // Nothing is synced when no weights will be loaded (an eval of the base model), so nothing is asked.
  if (options.loadsWeights !== false) await sync.check();
  const loaded: LoadModelResponse = await client.loadModel(loadModelRequest(recipe, modelDir));
  const checked = syncProbeFor(recipe, {
    engine: config.kind,
    protocol,
    replicas: replicaUrls,
    baseModel: 'policy',
    trainer: client,
    modelDir,
    trainerDevice: loaded.device,
    engineDtype: syncDtype,
    requestTimeoutMs,
  });
  probe = checked.probe;
  // The engine starts from the weights the trainer loaded; checked now, this also primes its prefix cache
  // with the probe, so a cache the first sync fails to reset shows up at the first check.
  if (options.loadsWeights !== false) await probe.verify(loaded.policy_version, 'policy');
  return {
    engine,
    trainer: trainerCalls(client, (version, dir) => sync.sync(version, dir)),
    sync,
    facts: {
      engine: config.kind,
      engine_version: version,
      engine_replicas: engines?.processes.length ?? urls.length,
      weight_sync: lora ? 'lora' : fullSync === 'broadcast' ? 'full (broadcast)' : 'full',
      ...checked.facts,
      ...trainerFacts(trainerProcess, loaded),
    },
    close: stopAll,
  };
}

const PHASE_WORDS: Readonly<Record<EngineStartProgress['phase'], string>> = {
  spawned: 'started',
  health: 'loading the model (waiting for GET /health)',
  models: 'waiting for GET /v1/models',
  ready: 'ready',
};

/**
 * Turns engine start progress into progress lines for the CLI: one per phase change of each replica,
 * and one every `everyS` seconds while a phase lasts (a large model loads for minutes).
 */
export function engineProgressLines(
  kind: string,
  emit: (message: string) => void,
  everyS = 15,
): (progress: EngineStartProgress) => void {
  const last = new Map<number, { phase: string; at: number }>();
  return (p) => {
    const previous = last.get(p.replica);
    if (previous && previous.phase === p.phase && p.elapsedS - previous.at < everyS) return;
    last.set(p.replica, { phase: p.phase, at: p.elapsedS });
    emit(
      `${kind} replica ${p.replica}: ${PHASE_WORDS[p.phase]} after ${Math.round(p.elapsedS)} s (limit ${p.timeoutS} s)`,
    );
  };
}
