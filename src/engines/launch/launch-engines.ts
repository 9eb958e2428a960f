import { statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { EngineConfig } from '../../recipe/schema.js';
import { startOnFreePort } from '../../util/free-port.js';
import { engineProtocols } from '../index.js';
import { createRouterEngine, type RoutedEngine } from '../router.js';
import type { Engine } from '../types.js';
import { engineAuth, engineCommand, type EngineCommand, type EngineLaunchSpec } from './engine-command.js';
import {
  EngineStartError,
  launchEngineProcess,
  type EngineProcess,
  type EngineStartProgress,
} from './engine-process.js';
import { runningEngineVersion } from './engine-version.js';

export interface LaunchEnginesOptions {
  readonly kind: 'vllm' | 'sglang';
  /** The recipe's model.engine. */
  readonly config: EngineConfig;
  /** Local model directory or hub id. */
  readonly model: string;
  /** Default `policy`. */
  readonly servedModelName?: string;
  readonly lora?: EngineLaunchSpec['lora'];
  readonly seed?: number;
  readonly python?: string;
  /** The run's logs/ directory: engine.log (one replica) or engine-<i>.log. */
  readonly logsDir: string;
  /** Limit for one generation request. */
  readonly requestTimeoutMs: number;
  readonly cwd?: string;
  readonly onProgress?: (progress: EngineStartProgress) => void;
  readonly signal?: AbortSignal;
  /** Where each replica runs (a cluster launcher); default: this machine on loopback, a share of config.gpus each. */
  readonly place?: (replica: number) => ReplicaPlace;
  /** Picks each replica's port; default: a free one on this machine. */
  readonly pickPort?: () => Promise<number>;
}

/**
 * One replica's place on a cluster: the address it binds, its GPUs on that node, the run token it must
 * require of every request (off loopback), and the command that starts it there.
 */
export interface ReplicaPlace {
  readonly host: string;
  readonly gpus: readonly number[];
  readonly token?: string;
  wrap(command: EngineCommand): EngineCommand;
}

/** Running engine replicas behind one router. */
export interface LaunchedEngines {
  /** Routes each request to the replica with the fewest in flight. */
  readonly engine: RoutedEngine;
  readonly processes: readonly EngineProcess[];
  /** Reported by the first replica (GET /version or /get_server_info); null when it does not say. */
  readonly version: string | null;
  /** Stops every replica's process group; idempotent. */
  stop(): Promise<void>;
}

/**
 * Launches `config.replicas` engine servers, each on its share of `config.gpus` and its own loopback
 * port (another, up to three tries, when the engine finds the one picked for it taken), in parallel,
 * and returns them behind a fewest-in-flight router. If one fails to start, the others are stopped
 * before the error is thrown.
 * @throws EngineStartError (a ProviderError) quoting the failing replica's log.
 */
export async function launchEngines(options: LaunchEnginesOptions): Promise<LaunchedEngines> {
  const { config } = options;
  const served = options.servedModelName ?? 'policy';
  const shares = replicaGpus(config.gpus, config.replicas);
  const started: EngineProcess[] = [];
  const launches = shares.map(async (share, replica) => {
    const place = options.place?.(replica);
    const gpus = place ? place.gpus : share;
    const logFile = join(options.logsDir, config.replicas === 1 ? 'engine.log' : `engine-${replica}.log`);
    // Whether a failed start found its port taken is read from what that start appended to the log.
    let logged = 0;
    const portTaken = async (error: unknown): Promise<boolean> =>
      error instanceof EngineStartError &&
      /address already in use/i.test(
        (await readFile(logFile).catch(() => Buffer.alloc(0))).subarray(logged).toString(),
      );
    const launch = async (port: number): Promise<EngineProcess> => {
      logged = logSize(logFile);
      const spec = {
        kind: options.kind,
        model: options.model,
        servedModelName: served,
        port,
        ...(config.command ? { command: config.command } : {}),
        env: config.env,
        ...(options.python ? { python: options.python } : {}),
        args: config.args,
        gpus,
        gpuMemoryUtilization: config.gpu_memory_utilization,
        maxModelLen: config.max_model_len,
        ...(options.seed === undefined ? {} : { seed: options.seed }),
        ...(options.lora ? { lora: options.lora } : {}),
        ...(place ? { host: place.host } : {}),
      };
      const command = place ? place.wrap(engineAuth(spec.kind, engineCommand(spec), place.token)) : engineCommand(spec);
      const proc = await launchEngineProcess({
        name: options.kind,
        command,
        port,
        ...(place ? { host: place.host } : {}),
        servedModelName: served,
        logFile,
        startupTimeoutMs: config.startup_timeout_s * 1000,
        replica,
        ...(options.cwd ? { cwd: options.cwd } : {}),
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      });
      started.push(proc);
      return proc;
    };
    return startOnFreePort(launch, portTaken, options.pickPort);
  });
  const results = await Promise.allSettled(launches);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await Promise.all(started.map((p) => p.stop()));
    throw failed.reason;
  }
  const processes = results.map((r) => (r as PromiseFulfilledResult<EngineProcess>).value);
  const clients: Engine[] = processes.map((p) =>
    engineProtocols[options.kind]({ baseUrl: p.baseUrl, model: served, timeoutMs: options.requestTimeoutMs }),
  );
  const version = await runningEngineVersion(options.kind, processes[0].baseUrl);
  let stopping: Promise<void> | undefined;
  return {
    engine: createRouterEngine(clients),
    processes,
    version,
    stop: () => (stopping ??= Promise.all(processes.map((p) => p.stop())).then(() => undefined)),
  };
}

/** Bytes in `file` now (0 when it does not exist yet). */
function logSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/**
 * Each replica's GPUs: `gpus` split into `replicas` equal consecutive shares (more than one GPU per
 * replica is tensor parallel). No GPUs listed = every replica on the engine's default device.
 */
export function replicaGpus(gpus: readonly number[], replicas: number): number[][] {
  if (gpus.length === 0) return Array.from({ length: replicas }, () => []);
  const per = Math.floor(gpus.length / replicas);
  return Array.from({ length: replicas }, (_, i) => gpus.slice(i * per, (i + 1) * per));
}
