/**
 * The check after every weight sync: each engine replica is asked for the logprobs of one fixed probe
 * sequence and they are compared with the trainer's own on the weights it just trained. An engine that goes
 * on sampling old weights after a sync that "succeeded" (a reload that skipped a layer, an adapter that did
 * not take, a prefix cache that was not reset) fails the step here, before any episode samples from it.
 *
 * Two requests per replica, sent together: the probe's prompt logprobs (vLLM's `prompt_logprobs`, SGLang's
 * `logprob_start_len`), which engines compute without their prefix cache and so test the weights, and the
 * greedy next token with its logprob, whose prefill reuses the prefix cache, so keys and values the old
 * weights computed for the probe at the previous check show up as a gap there.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { engineProtocols, tokenScorers } from '../engines/index.js';
import { ProviderError } from '../errors/index.js';
import type { TrainerClient } from '../trainer/index.js';
import { createRng } from '../util/random.js';

/** Tokens of the probe: past vLLM's CPU prefix-cache block (128 tokens), so at least one block of it is cached. */
export const PROBE_LENGTH = 160;

/**
 * Largest gap allowed between an engine's logprob and the trainer's, by the precision the two compute in.
 * float32: the embedded engine's gap is 0 (the trainer's own forward), real vLLM on a CPU measured 3.3e-6;
 * 1e-3 leaves room for other kernels, while one sft step of the quickstart moved the probe by 0.02-0.24 where
 * a sync went wrong. half (bf16/fp16 on either side): rounding alone moves logprobs, most on the probe's
 * unlikely tokens: bf16 weights and compute against float32 moved SmolLM2-135M's by up to 0.27 (mean
 * 0.066), the tiny model's by up to 0.024; 1.0 leaves room for larger models, so in half precision the check
 * catches an engine far off (a stale layer or adapter over several steps, a stale prefix cache), not one
 * small step's worth.
 */
export const PROBE_TOLERANCES = { float32: 1e-3, half: 1.0 } as const;
export type ProbePrecision = keyof typeof PROBE_TOLERANCES;

/** The least time a probe request gets, whatever rollout.request_timeout_s is. */
const PROBE_MIN_TIMEOUT_MS = 60_000;

/** What a probe needs: the replicas, the trainer to compare with, and the sequence. */
export interface SyncProbeOptions {
  /** How messages name the engine: `vllm`, `sglang`, `embedded`, `url`. */
  readonly engine: string;
  readonly protocol: 'vllm' | 'sglang';
  /** Base URL of every replica; each is checked. */
  readonly replicas: readonly string[];
  /** The served base model's name (SGLang routes any other name to a LoRA adapter). */
  readonly baseModel: string;
  readonly trainer: Pick<TrainerClient, 'logprobs'>;
  /** The probe sequence (probeSequence). */
  readonly tokens: readonly number[];
  readonly tolerance: number;
  /** What the tolerance is for, in messages: `float32`, `half precision`, `model.engine.sync_probe_tolerance`. */
  readonly toleranceReason: string;
  /** Limit of each request. */
  readonly timeoutMs: number;
}

/** Checks that every replica serves what the trainer holds. */
export interface SyncProbe {
  /**
   * Asks every replica, under model name `model`, and the trainer, for the probe's logprobs.
   * @returns the largest gap between an engine's logprob and the trainer's, over every replica and position.
   * @throws ProviderError naming the engine, replica, policy version and gap when it is over the tolerance,
   * or when the trainer holds another policy version than `policyVersion`.
   */
  verify(policyVersion: number, model: string): Promise<number>;
}

/** One replica's answer to the probe. */
interface EngineAnswer {
  readonly replica: number;
  readonly prompt: readonly (number | null)[];
  /** The greedy token after the probe, and its logprob (computed through the prefix cache). */
  readonly next: { readonly id: number; readonly logprob: number };
}

/** A probe over `options.replicas`. */
export function createSyncProbe(options: SyncProbeOptions): SyncProbe {
  const { tokens, protocol } = options;
  return {
    async verify(policyVersion, model) {
      const answers = await Promise.all(options.replicas.map((url, replica) => askEngine(url, replica, model)));
      const trainer = new Map<number, readonly (number | null)[]>();
      for (const id of new Set(answers.map((a) => a.next.id))) {
        const reply = await options.trainer.logprobs([...tokens, id]);
        if (reply.policyVersion !== policyVersion)
          throw new ProviderError(
            `weight sync check: the trainer holds policy ${reply.policyVersion}, the engine was synced to ${policyVersion}`,
          );
        trainer.set(id, reply.logprobs);
      }
      let largest = 0;
      for (const answer of answers) {
        const own = trainer.get(answer.next.id)!;
        const gap = widestGap(answer, own);
        largest = Math.max(largest, gap.value);
        if (gap.value > options.tolerance) throw mismatch(answer, gap, policyVersion, model);
      }
      return largest;
    },
  };

  async function askEngine(baseUrl: string, replica: number, model: string): Promise<EngineAnswer> {
    // Named as the engine's own requests are, so a probe that times out says which engine did.
    const name = options.engine === 'embedded' ? 'embedded engine' : options.engine;
    const client = { baseUrl, model, name, timeoutMs: options.timeoutMs };
    const engine = engineProtocols[protocol]({ ...client, model: options.baseModel });
    engine.setModel(model);
    const [prompt, next] = await Promise.all([
      tokenScorers[protocol](client, options.baseModel).score(tokens),
      engine.generate(tokens, { maxTokens: 1, temperature: 0, topP: 1, topK: -1 }),
    ]);
    const id = next.tokenIds[0];
    const logprob = next.logprobs[0];
    if (id === undefined || logprob === undefined)
      throw new ProviderError(
        `weight sync check: ${options.engine} replica ${replica} generated no token after the probe`,
      );
    return { replica, prompt, next: { id, logprob } };
  }

  function mismatch(answer: EngineAnswer, gap: Gap, policyVersion: number, model: string): ProviderError {
    const where =
      gap.position === tokens.length
        ? `the greedy token after it (through the prefix cache): engine ${fixed(gap.engine)}, trainer ${fixed(gap.trainer)}`
        : `prompt token ${gap.position}: engine ${fixed(gap.engine)}, trainer ${fixed(gap.trainer)}`;
    const replicas = options.replicas.length > 1 ? ` replica ${answer.replica}` : '';
    const adapter = model === options.baseModel ? '' : ` (adapter ${model})`;
    return new ProviderError(
      `weight sync check failed: the ${options.engine} engine${replicas} does not serve policy ${policyVersion}${adapter}: its logprobs of a ${tokens.length}-token probe are up to ${fixed(gap.value)} away from the trainer's (tolerance ${options.tolerance}, ${options.toleranceReason}); widest at ${where}`,
      {
        hint: 'the engine samples weights the trainer did not train: a reload that skipped weights, an adapter that did not take, or a prefix cache kept from the old weights. atk run --resume continues from the last checkpoint once it is fixed; model.engine.sync_probe_tolerance sets the tolerance',
      },
    );
  }
}

/** Where an engine's answer sits farthest from the trainer's logprobs (`own`, aligned with the probe + next token). */
interface Gap {
  readonly value: number;
  /** Position in probe + next token (probe length = the next token). */
  readonly position: number;
  readonly engine: number;
  readonly trainer: number;
}

function widestGap(answer: EngineAnswer, own: readonly (number | null)[]): Gap {
  let widest: Gap = { value: -1, position: 0, engine: 0, trainer: 0 };
  const consider = (position: number, engine: number | null | undefined): void => {
    const trainer = own[position];
    if (engine === null || engine === undefined || trainer === null || trainer === undefined) return;
    const value = Math.abs(engine - trainer);
    // NaN (a broken engine) counts as the widest gap there is.
    if (Number.isNaN(value) || value > widest.value)
      widest = { value: Number.isNaN(value) ? Infinity : value, position, engine, trainer };
  };
  for (const [t, logprob] of answer.prompt.entries()) consider(t, logprob);
  consider(answer.prompt.length, answer.next.logprob);
  return { ...widest, value: Math.max(widest.value, 0) };
}

function fixed(x: number): string {
  return Math.abs(x) >= 1e-3 || x === 0 ? x.toFixed(4) : x.toExponential(2);
}

/**
 * The probe sequence of a model: PROBE_LENGTH token ids (fewer when `maxModelLen` leaves no room for them and
 * the one generated token) drawn from the whole vocabulary by a fixed seed, so every check and every run of
 * the same model asks the same question.
 */
export function probeSequence(vocabSize: number, maxModelLen: number): number[] {
  const length = Math.max(2, Math.min(PROBE_LENGTH, maxModelLen - 1));
  const rng = createRng(0x5eed_1000);
  return Array.from({ length }, () => Math.floor(rng() * vocabSize));
}

/**
 * What the probe is drawn for, from the model directory's config.json (what both the trainer and the engine
 * load): its vocabulary, and the positions it was built for (engines refuse longer prompts by default).
 */
export function probeShape(modelDir: string): { readonly vocabSize: number; readonly maxPositions: number } {
  const file = join(modelDir, 'config.json');
  const config = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown> & {
    text_config?: Record<string, unknown>;
  };
  const read = (key: string): unknown => config[key] ?? config.text_config?.[key];
  const vocabSize = read('vocab_size');
  if (typeof vocabSize !== 'number' || !Number.isInteger(vocabSize) || vocabSize < 2)
    throw new ProviderError(`${file}: no vocab_size to draw the weight sync probe from`);
  const positions = read('max_position_embeddings');
  return { vocabSize, maxPositions: typeof positions === 'number' && positions > 0 ? positions : Infinity };
}

/** The precision a side of the check computes in: float32, or half (bf16/fp16) when either side rounds to it. */
export function probeTolerance(
  setting: number | undefined,
  trainer: ProbePrecision,
  engine: ProbePrecision,
): { readonly tolerance: number; readonly reason: string } {
  if (setting !== undefined) return { tolerance: setting, reason: 'model.engine.sync_probe_tolerance' };
  return trainer === 'float32' && engine === 'float32'
    ? { tolerance: PROBE_TOLERANCES.float32, reason: 'float32 on both sides' }
    : { tolerance: PROBE_TOLERANCES.half, reason: 'half precision on a side' };
}

/**
 * The precision the trainer computes logprobs in: float32 unless it trains in bfloat16 (`model.trainer.dtype`),
 * or on CUDA under bf16 autocast (dtype auto).
 */
export function trainerPrecision(dtype: 'auto' | 'float32' | 'bfloat16', device: string): ProbePrecision {
  if (dtype === 'bfloat16') return 'half';
  return dtype === 'auto' && device.startsWith('cuda') ? 'half' : 'float32';
}

/** What `syncProbeFor` reads of a recipe. */
export interface ProbeRecipe {
  readonly model: {
    readonly engine: { readonly max_model_len: number; readonly sync_probe_tolerance?: number | undefined };
    readonly trainer: { readonly dtype: 'auto' | 'float32' | 'bfloat16' };
  };
}

/**
 * The sync probe of a started policy, with the facts the run manifest records of it.
 * `engineDtype`: what the engine serves the weights in; `trainer` for the embedded engine (the trainer's own
 * forward), undefined when unknown (a server atk did not launch, a float32 config an engine may serve in half).
 */
export function syncProbeFor(
  recipe: ProbeRecipe,
  parts: Pick<SyncProbeOptions, 'engine' | 'protocol' | 'replicas' | 'baseModel' | 'trainer'> & {
    readonly modelDir: string;
    /** Where the trainer loaded the model (`cpu`, `cuda:0`), as /control/load_model answered. */
    readonly trainerDevice: string;
    readonly engineDtype: 'trainer' | 'float32' | 'bfloat16' | 'float16' | undefined;
    /** The limit of one probe request: the run's engine-request timeout (rollout-timeouts.ts). */
    readonly requestTimeoutMs: number;
  },
): { readonly probe: SyncProbe; readonly facts: Readonly<Record<string, unknown>> } {
  const { engine, trainer } = recipe.model;
  const own = trainerPrecision(trainer.dtype, parts.trainerDevice);
  const served = parts.engineDtype === 'trainer' ? own : parts.engineDtype === 'float32' ? 'float32' : 'half';
  const { tolerance, reason } = probeTolerance(engine.sync_probe_tolerance, own, served);
  const shape = probeShape(parts.modelDir);
  const tokens = probeSequence(shape.vocabSize, Math.min(engine.max_model_len, shape.maxPositions));
  const probe = createSyncProbe({
    ...parts,
    tokens,
    tolerance,
    toleranceReason: reason,
    // The probe is atk's own check, one short request: a request timeout set for the episodes' sake (tests
    // set 50 ms) must not fail it, while a hung engine still does.
    timeoutMs: Math.max(parts.requestTimeoutMs, PROBE_MIN_TIMEOUT_MS),
  });
  return { probe, facts: { sync_probe: { tokens: tokens.length, tolerance, precision: reason } } };
}
