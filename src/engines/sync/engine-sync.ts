import { readdir, rm, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import type { Engine } from '../types.js';
import type { RequestTracker } from './in-flight.js';
import { replicaAdmin, type ReplicaAdmin } from './replica-admin.js';
import {
  createWeightBroadcast,
  type SyncTransfer,
  type WeightBroadcast,
  type WeightBroadcastOptions,
} from './weight-broadcast.js';
import { ProviderError } from '../../errors/index.js';

export interface EngineSyncOptions {
  /** lora: hot-load the trained adapter under a new name; full: reload all weights from disk. */
  readonly mode: 'lora' | 'full';
  readonly protocol: 'vllm' | 'sglang';
  /** The client rollouts use (a router over the replicas, or one client); it is renamed to the new adapter. */
  readonly engine: Engine;
  /** Base URL of every replica; a sync is done only when it has reached all of them. */
  readonly replicaUrls: readonly string[];
  /** Writes the policy into `dir` (the trainer's save: a peft adapter with LoRA, HF weights without). */
  readonly writePolicy: (dir: string) => Promise<void>;
  /** Served name of the base model; adapters are served as `<base>@<policyVersion>`. Default `policy`. */
  readonly baseModelName?: string;
  /** Limit for one admin request; default 300 s (a full reload of a large model takes minutes). */
  readonly timeoutMs?: number;
  /**
   * The rollouts' requests (asynchronous rollouts run episodes during a sync). With it, a sync does not
   * stop the world: the previous adapter is unloaded only once its last request finished, and a full
   * reload holds back new requests only while the weights are replaced. Without it, the engine is idle
   * during a sync (the synchronous loop) and the old adapter is unloaded at once.
   */
  readonly requests?: RequestTracker;
  /**
   * Puts the written policy where replica `replica` can read it and returns that path (a copy on an engine
   * node without a shared disk); default: the replica reads `dir` itself.
   */
  readonly stage?: (replica: number, dir: string) => Promise<string>;
  /**
   * Full weights over a torch.distributed group from the trainer to every replica's workers (vLLM with atk's
   * worker extension) instead of written and reloaded from disk: the trainer's end and the group's settings.
   */
  readonly broadcast?: Omit<WeightBroadcastOptions, 'replicas'>;
  /**
   * Checks that every replica serves policy `policyVersion` under model name `model` (the sync probe): called
   * once the new weights are in, before any new request is routed to them; returns the figure it measured
   * (lastProbe) and throws to fail the sync.
   */
  readonly verify?: (policyVersion: number, model: string) => Promise<number>;
}

/** A PolicySync for launched engines, with what it did last. */
export interface EngineSync {
  /**
   * Writes the trainer's policy for `policyVersion` under `<checkpoints>/sync/<step dir>`, puts it into every
   * replica, resets their prefix caches, confirms each serves it, then routes new requests to it.
   * @throws ProviderError with the engine's message when a replica refuses or does not serve the new policy.
   */
  sync(policyVersion: number, checkpointDir: string): Promise<void>;
  /** The adapter name (lora) or weight version (full) served now; the base name before the first sync. */
  readonly served: string;
  /** Wall-clock seconds of the last sync (write + load + confirm). */
  readonly lastSeconds: number;
  /** What the last sync moved: the bytes written (disk) or broadcast (once, whatever the replicas), tensors of a broadcast. */
  readonly lastTransfer: SyncTransfer | undefined;
  /** What `verify` measured after the last sync (undefined without `verify`, or when the sync moved nothing). */
  readonly lastProbe: number | undefined;
  /** Throws, with how to fix it, unless every replica can take this sync's weights (checked before training). */
  check(): Promise<void>;
}

/**
 * Keeps launched vLLM/SGLang replicas serving the trainer's newest policy (docs/engines.md, weight sync).
 * LoRA: load `policy@N` from the new peft directory, unload `policy@N-1`, reset the prefix cache, check the
 * replica serves `policy@N`, then `engine.setModel('policy@N')` (with `requests`, `policy@N-1` is unloaded
 * only once its running requests finish, so the sync does not wait for them). Full: reload with weight version `policy@N`
 * (SGLang `update_weights_from_disk`; vLLM atk's worker extension, then `reset_prefix_cache`), check the version. The previous sync directory
 * is deleted once no replica uses it.
 */
export function createEngineSync(options: EngineSyncOptions): EngineSync {
  const base = options.baseModelName ?? 'policy';
  const admins: ReplicaAdmin[] = options.replicaUrls.map((url) =>
    replicaAdmin(options.protocol, url, options.timeoutMs),
  );
  const broadcast = options.mode === 'full' && options.broadcast ? broadcastTo(admins, options) : undefined;
  let served = base;
  // Version 0 is the untrained base model the engine was started with.
  let servedVersion = 0;
  let servedDir: string | undefined;
  let lastSeconds = 0;
  let lastTransfer: SyncTransfer | undefined;
  let lastProbe: number | undefined;
  // The unload of an adapter that still had requests running when it was replaced (with `requests` only).
  let retiring: Promise<void> = Promise.resolve();

  async function loraReplica(
    admin: ReplicaAdmin,
    name: string,
    dir: string,
    previous: string | undefined,
  ): Promise<void> {
    await admin.loadAdapter(name, dir);
    if (previous && !options.requests) await admin.unloadAdapter(previous);
    await admin.resetPrefixCache();
    await admin.confirmAdapter(name);
  }

  async function fullReplica(admin: ReplicaAdmin, name: string, dir: string): Promise<void> {
    await admin.reloadWeights(dir, name); // the prefix cache goes with the old weights
    await admin.confirmWeights(name);
  }

  /** Unloads `previous` from every replica once no request sent to it is running; fails the next sync if it fails. */
  function retire(previous: string, requests: RequestTracker): void {
    retiring = requests
      .drained(previous)
      .then(async () => void (await Promise.all(admins.map((admin) => admin.unloadAdapter(previous)))));
    retiring.catch(() => undefined); // reported by the next sync, which awaits it
  }

  return {
    get served() {
      return served;
    },
    get lastSeconds() {
      return lastSeconds;
    },
    get lastTransfer() {
      return lastTransfer;
    },
    get lastProbe() {
      return lastProbe;
    },
    async check() {
      if (options.mode === 'full') await Promise.all(admins.map((admin) => admin.checkWeightReload()));
    },
    async sync(policyVersion, checkpointDir) {
      const started = performance.now();
      lastTransfer = undefined;
      lastProbe = undefined;
      if (policyVersion === servedVersion) return;
      const name = `${base}@${policyVersion}`;
      // Requests name the adapter after a LoRA sync, the base model after a full one.
      const model = options.mode === 'lora' ? name : base;
      const verified = async (): Promise<void> => void (lastProbe = await options.verify?.(policyVersion, model));
      lastTransfer = await (broadcast
        ? broadcastFull(broadcast, name, verified)
        : viaDisk(name, syncDirFor(checkpointDir), verified));
      served = name;
      servedVersion = policyVersion;
      lastSeconds = (performance.now() - started) / 1000;
    },
  };

  /**
   * Writes the policy to `dir`, has every replica load it from there (or its staged copy), runs `verified`
   * before new requests reach the new weights, drops the previous dir.
   */
  async function viaDisk(name: string, dir: string, verified: () => Promise<void>): Promise<SyncTransfer> {
    await options.writePolicy(dir);
    const transfer = { bytes: await directoryBytes(dir) };
    await retiring;
    const previous = served === base ? undefined : served;
    const staged = await Promise.all(
      admins.map((_, replica) => (options.stage ? options.stage(replica, dir) : Promise.resolve(dir))),
    );
    if (options.mode === 'lora') {
      await Promise.all(admins.map((admin, replica) => loraReplica(admin, name, staged[replica]!, previous)));
      await verified();
      options.engine.setModel(name);
      if (previous && options.requests) retire(previous, options.requests);
    } else {
      await whileHeld(async () => {
        await Promise.all(admins.map((admin, replica) => fullReplica(admin, name, staged[replica]!)));
        await verified();
      });
    }
    if (servedDir && servedDir !== dir) await rm(servedDir, { recursive: true, force: true });
    servedDir = dir;
    return transfer;
  }

  /** Broadcasts the weights into every worker, then drops the replicas' prefix caches and checks their version and `verified`. */
  async function broadcastFull(
    broadcast: WeightBroadcast,
    name: string,
    verified: () => Promise<void>,
  ): Promise<SyncTransfer> {
    return whileHeld(async () => {
      const transfer = await broadcast.reload(name);
      await Promise.all(admins.map(async (admin) => admin.resetPrefixCache().then(() => admin.confirmWeights(name))));
      await verified();
      return transfer;
    });
  }

  /** Runs `replace` with new requests held back (with `requests`): no request samples from half-replaced weights. */
  async function whileHeld<T>(replace: () => Promise<T>): Promise<T> {
    const resume = options.requests?.pause();
    try {
      return await replace();
    } finally {
      resume?.();
    }
  }
}

function broadcastTo(admins: readonly ReplicaAdmin[], options: EngineSyncOptions): WeightBroadcast {
  const replicas = admins.map((admin, i) => {
    if (!admin.broadcast)
      throw new ProviderError(`model.engine.weight_sync broadcast: ${options.protocol} replicas reload from disk only`);
    return { url: options.replicaUrls[i]!, receiver: admin.broadcast };
  });
  return createWeightBroadcast({ ...options.broadcast!, replicas });
}

/** Bytes of the files in `dir` (the policy a disk sync wrote). */
async function directoryBytes(dir: string): Promise<number> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  const sizes = await Promise.all(
    entries.filter((e) => e.isFile()).map(async (e) => (await stat(join(e.parentPath, e.name))).size),
  );
  return sizes.reduce((a, b) => a + b, 0);
}

/** Where a sync for `checkpointDir` writes the policy (beside the checkpoints, never inside a kept one). */
export function syncDirFor(checkpointDir: string): string {
  return join(resolve(dirname(checkpointDir)), 'sync', basename(checkpointDir));
}
