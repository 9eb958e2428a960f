import { z } from 'zod';
import { AtkError, TrainerError } from '../errors/index.js';
import { requestJson, type HttpTarget } from '../util/http.js';
import type { TrainConfigInput } from './train-config.js';
import { trainerErrorFromLog } from './traceback.js';

/**
 * One training sequence as `/control/train_step` takes it (trainer/PROTOCOL.md, trainer/protocol/
 * train_step.request.json): the one declaration batch assembly builds and the client sends.
 */
export interface TrainSequence {
  readonly token_ids: readonly number[];
  /** 1 on engine-generated tokens. */
  readonly loss_mask: readonly number[];
  /** Behaviour logprobs aligned with token_ids, 0 where the mask is 0 (not needed for sft). */
  readonly logprobs?: readonly number[];
  /** One advantage for the whole sequence ... */
  readonly advantage?: number;
  /** ... or one per token. */
  readonly advantages?: readonly number[];
}

/** A train step's batch; extra fields (e.g. an assembled batch's bookkeeping) are not sent. */
export interface TrainBatchInput {
  readonly loss: 'pg' | 'sft';
  readonly sequences: readonly TrainSequence[];
}

/** What `/control/load_model` takes. */
export interface LoadModelRequest {
  /** Hugging Face layout directory. */
  readonly path: string;
  /** pretrained loads the weights; random initialises from config.json with `train.seed`. */
  readonly init?: 'pretrained' | 'random';
  readonly backend?: 'auto' | 'transformers' | 'builtin';
  readonly device?: 'auto' | 'cpu' | 'cuda';
  readonly dtype?: 'auto' | 'float32' | 'bfloat16';
  /** Longest prompt + completion the embedded engine accepts; default: config.json's max_position_embeddings. */
  readonly max_model_len?: number;
  /** TrainConfig overrides (trainer/atk_trainer/train/config.py); unknown keys are rejected. */
  readonly train?: TrainConfigInput;
}

export const LoadModelResponse = z.looseObject({
  model: z.string(),
  backend: z.string(),
  device: z.string(),
  parameters: z.number().int(),
  trainable_parameters: z.number().int(),
  policy_version: z.number().int(),
});
export type LoadModelResponse = z.infer<typeof LoadModelResponse>;

const TrainStepResponse = z.object({
  policy_version: z.number().int(),
  metrics: z.record(z.string(), z.number()),
});

export const CheckpointResponse = z.object({
  dir: z.string(),
  policy_version: z.number().int(),
  step: z.number().int(),
});
export type CheckpointResponse = z.infer<typeof CheckpointResponse>;

const LogprobsResponse = z.object({
  policy_version: z.number().int(),
  logprobs: z.array(z.number().nullable()),
});

export const HealthResponse = z.looseObject({
  status: z.literal('ok'),
  model_loaded: z.boolean(),
  policy_version: z.number().int(),
});
export type HealthResponse = z.infer<typeof HealthResponse>;

/** The trainer's control API, typed; every reply is parsed before use. */
export interface TrainerClient {
  readonly baseUrl: string;
  health(): Promise<HealthResponse>;
  loadModel(request: LoadModelRequest): Promise<LoadModelResponse>;
  /** One update; the embedded engine serves the new weights once this resolves. */
  trainStep(
    batch: TrainBatchInput,
  ): Promise<{ readonly metrics: Readonly<Record<string, number>>; readonly policyVersion: number }>;
  /**
   * Writes weights or adapter plus optimizer/RNG state to `dir`, atomically. `weightsOnly` leaves the state
   * out (what an engine loads), and `dtype` then writes full weights in the dtype the engine serves.
   */
  save(
    dir: string,
    options?: { readonly weightsOnly?: boolean; readonly dtype?: 'float32' | 'bfloat16' | 'float16' },
  ): Promise<CheckpointResponse>;
  /** Restores a `save`d directory into the loaded model. */
  loadCheckpoint(dir: string): Promise<CheckpointResponse>;
  /**
   * The trainer's own `log p(ids[t] | ids[:t])` on its current weights (null at t = 0), computed as a train
   * step computes them, with the policy version they belong to: what a weight sync is checked against.
   */
  logprobs(ids: readonly number[]): Promise<{ readonly policyVersion: number; readonly logprobs: (number | null)[] }>;
  /** Asks the process to exit; resolves when it has answered. */
  shutdown(): Promise<void>;
  /**
   * The trainer's end of a full-weight broadcast (PROTOCOL.md /control/weights/*): open a rendezvous store
   * reachable at `masterAddr`, join the group of `worldSize` members, send every tensor.
   */
  readonly weights: {
    open(request: WeightsOpenRequest): Promise<WeightsOpenResponse>;
    join(worldSize: number): Promise<void>;
    send(): Promise<WeightsSendResponse>;
  };
}

export interface WeightsOpenRequest {
  readonly masterAddr: string;
  readonly dtype?: 'float32' | 'bfloat16' | 'float16' | undefined;
  readonly timeoutS: number;
}

export const WeightsOpenResponse = z.looseObject({
  port: z.number().int(),
  backend: z.enum(['gloo', 'nccl']),
  /** [name, dtype, shape] of every tensor, in the order they are sent. */
  tensors: z.array(z.tuple([z.string(), z.string(), z.array(z.number().int())])),
  bytes: z.number().int(),
  /** The trainer's torch version; the engine workers must run the same (absent from older trainers). */
  torch: z.string().optional(),
});
export type WeightsOpenResponse = z.infer<typeof WeightsOpenResponse>;

export const WeightsSendResponse = z.looseObject({
  tensors: z.number().int(),
  bytes: z.number().int(),
  seconds: z.number(),
});
export type WeightsSendResponse = z.infer<typeof WeightsSendResponse>;

export interface TrainerClientOptions {
  /** e.g. http://127.0.0.1:41234 */
  readonly baseUrl: string;
  /** The trainer's log, named in every error. */
  readonly logFile: string;
  /** Limit for one control request (a train step or a checkpoint write can be slow); default 1 h. */
  readonly timeoutMs?: number;
  /** Resolves when the trainer process exits, so a failed request reports the crash's own traceback. */
  readonly exited?: Promise<unknown>;
}

/**
 * A client for a running trainer's control API.
 * @throws TrainerError (one line: what failed, Python's exception line, the log path) from every method.
 */
export function createTrainerClient(options: TrainerClientOptions): TrainerClient {
  const target: HttpTarget = {
    name: 'trainer',
    baseUrl: options.baseUrl,
    timeoutMs: options.timeoutMs ?? 3_600_000,
    retries: 0,
    backoffMs: 0,
  };
  async function call<T>(schema: z.ZodType<T>, method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    let reply: unknown;
    try {
      reply = await requestJson(target, method, path, body);
    } catch (error) {
      throw await asTrainerError(error, path, options);
    }
    const parsed = schema.safeParse(reply);
    if (!parsed.success) {
      throw new TrainerError(
        `trainer ${path} answered an unexpected reply: ${z.prettifyError(parsed.error).split('\n').join('; ')} (log: ${options.logFile})`,
        options.logFile,
      );
    }
    return parsed.data;
  }
  return {
    baseUrl: options.baseUrl,
    health: () => call(HealthResponse, 'GET', '/control/health'),
    loadModel: (request) => call(LoadModelResponse, 'POST', '/control/load_model', request),
    async trainStep(batch) {
      const reply = await call(TrainStepResponse, 'POST', '/control/train_step', {
        loss: batch.loss,
        sequences: batch.sequences,
      });
      return { metrics: reply.metrics, policyVersion: reply.policy_version };
    },
    save: (dir, options) =>
      call(CheckpointResponse, 'POST', '/control/save', {
        dir,
        ...(options?.weightsOnly ? { weights_only: true } : {}),
        ...(options?.weightsOnly && options.dtype ? { dtype: options.dtype } : {}),
      }),
    loadCheckpoint: (dir) => call(CheckpointResponse, 'POST', '/control/load_checkpoint', { dir }),
    async logprobs(ids) {
      const reply = await call(LogprobsResponse, 'POST', '/control/logprobs', { token_ids: ids });
      return { policyVersion: reply.policy_version, logprobs: reply.logprobs };
    },
    async shutdown() {
      await call(z.unknown(), 'POST', '/control/shutdown', {});
    },
    weights: {
      open: (request) =>
        call(WeightsOpenResponse, 'POST', '/control/weights/open', {
          master_addr: request.masterAddr,
          timeout_s: request.timeoutS,
          ...(request.dtype ? { dtype: request.dtype } : {}),
        }),
      join: async (worldSize) =>
        void (await call(z.unknown(), 'POST', '/control/weights/join', { world_size: worldSize })),
      send: () => call(WeightsSendResponse, 'POST', '/control/weights/send', {}),
    },
  };
}

/** A failed request as a TrainerError: the crash's traceback when the process died, else the server's message. */
async function asTrainerError(error: unknown, path: string, options: TrainerClientOptions): Promise<unknown> {
  if (!(error instanceof AtkError)) return error;
  // requestJson sets a cause only when no answer came (refused, reset, timeout): maybe a crash.
  if (options.exited && error.cause !== undefined) {
    // A request cut off by a crash fails a moment before the exit is seen; give the exit that moment.
    const died = await Promise.race([
      options.exited.then(
        () => true,
        () => true,
      ),
      delay(500).then(() => false),
    ]);
    if (died) return trainerErrorFromLog(`trainer exited during ${path}`, options.logFile);
  }
  const message = error.message.replace(/^trainer (GET|POST) /, 'trainer ');
  return new TrainerError(`${message} (log: ${options.logFile})`, options.logFile, {
    hint: `see ${options.logFile}`,
    cause: error,
  });
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
