import type { HttpTarget } from '../util/http.js';

/** Sampling settings of one engine request. */
export interface SamplingParams {
  /** Most tokens to generate (engines default to 16 or 128 when unset, so it is always sent). */
  readonly maxTokens: number;
  readonly temperature: number;
  readonly topP: number;
  /** -1 = off. */
  readonly topK: number;
  readonly seed?: number;
  /** Generation stops after any of these (the stop token is included in the output). */
  readonly stopTokenIds?: readonly number[];
  /** Samples per prompt; only `generateN` honours it. */
  readonly n?: number;
  /** Most likely alternatives to report per generated token (0 or unset: none); engines allow up to 20. */
  readonly topLogprobs?: number;
  /**
   * Makes the HTTP exchange elsewhere: the protocol client hands this the request as data instead of
   * sending it. The run thread sets it when relaying a rollout worker's request, so the worker, which
   * holds the prompt, sends it and parses the reply while the layers in between (stall watch, sync
   * tracking, replica routing, the adapter name) still see and shape the call on the run thread.
   */
  readonly exchange?: (request: ProtocolRequest, signal: AbortSignal | undefined) => Promise<Generation[]>;
}

/** One protocol request as plain data (no prompt): enough to send it from another thread. */
export interface ProtocolRequest {
  readonly kind: 'vllm' | 'sglang';
  readonly target: HttpTarget;
  /** The model name to ask for (an adapter's, after a LoRA sync). */
  readonly model: string;
  /** The served base model (SGLang routes any other name to a LoRA adapter). */
  readonly baseModel: string;
  readonly params: Omit<SamplingParams, 'exchange'>;
}

/** One alternative token at a generated position, with its logprob. */
export interface TokenLogprob {
  readonly id: number;
  readonly logprob: number;
}

/** The recipe's sampling for every model request of an episode (the reply cap and stops are set per request). */
export type EpisodeSampling = Pick<SamplingParams, 'temperature' | 'topP' | 'topK' | 'seed'>;

/** What the engine generated for one sample: its own token ids, one logprob each, and why it stopped. */
export interface Generation {
  readonly tokenIds: number[];
  readonly logprobs: number[];
  readonly finishReason: 'stop' | 'length' | 'abort';
  /** With `topLogprobs` k > 0: per generated token, the k most likely tokens, most likely first. */
  readonly topLogprobs?: readonly (readonly TokenLogprob[])[];
  /**
   * The policy version the run served when the request reached the engine client. Set only where the
   * episode reaches the engine through the run's thread (rollout workers), whose own view of the
   * served version would lag a weight sync.
   */
  readonly policyVersion?: number;
}

/**
 * One inference server spoken to with token ids (token-in/token-out). Clients share keep-alive
 * connections across episodes, retry connection errors with backoff, and time out each request.
 */
export interface Engine {
  /** Protocol: 'vllm' | 'sglang' | ... */
  readonly kind: string;
  readonly baseUrl: string;
  /** Model name sent with requests. */
  readonly model: string;
  /**
   * One sample for a token-id prompt.
   * @throws ProviderError on HTTP errors (with the server's own message), timeouts, malformed replies,
   * or when the server stays unreachable after the retries; rethrows the signal's reason when `signal` aborts.
   */
  generate(promptIds: readonly number[], params: SamplingParams, signal?: AbortSignal): Promise<Generation>;
  /** `params.n` samples of one prompt in one request (in order). @throws as `generate`. */
  generateN(promptIds: readonly number[], params: SamplingParams, signal?: AbortSignal): Promise<Generation[]>;
  /** True when the server answers its health endpoint with 200; never throws. */
  health(): Promise<boolean>;
  /** Served model names (base model and loaded adapters). @throws ProviderError. */
  models(): Promise<string[]>;
  /** Sets the model name sent with later requests (LoRA adapters are routed by name, e.g. `policy@12`). */
  setModel(name: string): void;
}

/** Options shared by the protocol clients. */
export interface EngineClientOptions {
  /** e.g. http://127.0.0.1:8000 (no trailing /v1). */
  readonly baseUrl: string;
  /** Served model name. */
  readonly model: string;
  /** What errors call this engine, e.g. `embedded engine`; default the protocol's name (vllm, sglang). */
  readonly name?: string;
  /** Limit for one HTTP request, default 120 000 ms. */
  readonly timeoutMs?: number;
  /** Extra attempts after a connection error (refused, reset), default 3, with exponential backoff from 250 ms. */
  readonly retries?: number;
  readonly backoffMs?: number;
}
