import type { AssembledBatch } from '../algorithms/batch.js';
import type { Engine } from '../engines/index.js';
import type { EngineStartProgress, ReplicaPlace } from '../engines/launch/index.js';
import type { SyncTransfer } from '../engines/sync/index.js';
import type { ResolvedRecipe } from '../recipe/index.js';
import type { LaunchTrainerOptions } from '../trainer/index.js';

/** A running policy: the trainer, the engine serving it, the sync between them, and how to stop both. */
export interface RunningPolicy {
  readonly trainer: PolicyTrainer;
  readonly sync: PolicySync;
  readonly engine: Engine;
  /** Facts for the run manifest (backend, device, parameter counts, python, engine kind). */
  readonly facts: Readonly<Record<string, unknown>>;
  /** Placed processes (cluster launchers): rejects, naming node and component, once one is lost mid-run. */
  readonly lost?: Promise<never>;
  close(): Promise<void>;
}

/** What starting a policy needs beside the recipe: where it logs and writes, and how to stop it early. */
export interface StartPolicyOptions {
  readonly recipe: ResolvedRecipe;
  readonly recipeDir: string;
  readonly logsDir: string;
  readonly runDir: string;
  readonly signal?: AbortSignal;
  /**
   * Whether weights will be loaded into the engine (training, a checkpoint); default true. False (an
   * eval of the base model) asks a url engine for no weight-reload extension or LoRA routes.
   */
  readonly loadsWeights?: boolean;
  /** Called while launched engines load (minutes for a large model); the CLI shows it. */
  readonly onEngineProgress?: (progress: EngineStartProgress) => void;
  /**
   * Places the trainer and engine replicas the recipe's cluster launcher puts off this machine; resolves
   * to undefined (or, absent, everything runs) on this machine on loopback.
   */
  readonly place?: (recipe: ResolvedRecipe) => Promise<PolicyPlacement | undefined>;
}

/** Where a policy's processes run off this machine (a cluster launcher), as starting a policy uses it. */
export interface PolicyPlacement {
  /** Options for launchTrainer: the node address to bind and the command wrapper. */
  readonly trainer: Pick<LaunchTrainerOptions, 'host' | 'wrap'>;
  /** For launchEngines: each replica's address, GPUs, run token and command wrapper. */
  place(replica: number): ReplicaPlace;
  /** Puts a written sync directory where replica `replica` reads it; returns that path. */
  readonly stage: (replica: number, dir: string) => Promise<string>;
  /**
   * `policy` whose trainer calls and syncs fail, naming node and component, once a placed process is
   * lost; the placement goes into its facts.
   */
  guard(policy: RunningPolicy, trainer: PlacedListener, engines: readonly PlacedListener[]): RunningPolicy;
  /** Ends whatever the placement still runs; idempotent. */
  close(): Promise<void>;
}

/** A placed process with its log, its end and the base URL its heartbeats go to. */
export interface PlacedListener {
  readonly logFile: string;
  readonly exited: Promise<number | null>;
  readonly baseUrl: string;
}

/** The trainer as the run loop sees it: one update per step, checkpoints, resume. */
export interface PolicyTrainer {
  /** Apply one update; returns the trainer's metrics and the new policy version. */
  trainStep(
    batch: AssembledBatch,
  ): Promise<{ readonly metrics: Readonly<Record<string, number>>; readonly policyVersion: number }>;
  /** Write a checkpoint (weights or adapter, plus optimizer/RNG state) to `dir`, atomically. */
  save(dir: string): Promise<void>;
  /** Restore a checkpoint written by `save`; returns its policy version. */
  load(dir: string): Promise<number>;
}

/** Keeps the inference engine serving the trainer's newest policy. */
export interface PolicySync {
  /**
   * Make the engine serve `policyVersion` before the next rollouts (embedded: shared weights,
   * nothing to do; vLLM/SGLang: load the adapter or reload weights from `checkpointDir`).
   */
  sync(policyVersion: number, checkpointDir: string): Promise<void>;
  /** What the last sync moved (launched engines; none when it moved nothing), for the step's `sync/` metrics. */
  readonly lastTransfer?: SyncTransfer | undefined;
  /**
   * The largest gap the check after the last sync found between the engine's logprobs of the probe sequence
   * and the trainer's (sync-probe.ts), for the step's `sync/probe_max_abs_logprob_diff`; undefined when none ran.
   */
  readonly lastProbe?: number | undefined;
}
