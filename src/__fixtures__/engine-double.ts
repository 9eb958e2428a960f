// A loopback test double of vLLM's /v1/completions and SGLang's /generate with the exact reply shapes of
// docs/engines.md, driven by a script that says which tokens "the model" writes for a prompt.
// Like a real engine it cuts the output at the first stop token or at max_tokens and reports why.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** What the scripted model writes (before stop tokens and max_tokens are applied). */
export interface ScriptedReply {
  readonly tokenIds: readonly number[];
  /** Defaults to a deterministic value per token. */
  readonly logprobs?: readonly number[];
  /** When the tokens run out without a stop token; default 'stop' (an EOS the engine did not report). */
  readonly finishReason?: 'stop' | 'length' | 'abort';
  /**
   * Per token, the engine's most likely tokens `[id, logprob]` in its own (any) order; the first k are
   * reported when a request asks for k top logprobs. Default: none beyond the sampled token.
   */
  readonly topTokens?: readonly (readonly (readonly [number, number])[])[];
}

/**
 * Two tokens whose engine-side top-2 lists come out of order, and whose first sampled token (5) is
 * not among its position's top 2, so an engine that adds the sampled token (vLLM) holds 3 there and
 * a client asking for 2 must cut and sort them.
 */
export const outOfOrderTopTokens: ScriptedReply = {
  tokenIds: [5, 302],
  logprobs: [-0.5, -0.25],
  topTokens: [
    [
      [7, -0.3],
      [9, -0.1],
    ],
    [
      [4, -3],
      [302, -0.25],
    ],
  ],
};

/** An HTTP failure to answer with instead. */
export interface ScriptedFailure {
  readonly status: number;
  readonly body: unknown;
}

/** One request as the double saw it, with the prompt and params in protocol-neutral form. */
export interface DoubleRequest {
  readonly protocol: 'vllm' | 'sglang';
  readonly path: string;
  readonly promptIds: number[];
  readonly maxTokens: number;
  readonly stopTokenIds: number[];
  readonly n: number;
  readonly seed: number | undefined;
  readonly model: string | undefined;
  readonly body: Record<string, unknown>;
  /** Token ids of each sample answered (empty for failures). */
  readonly outputs: number[][];
}

export type ReplyScript = (
  request: DoubleRequest,
  sample: number,
) => ScriptedReply | ScriptedFailure | 'hang' | Promise<ScriptedReply | ScriptedFailure | 'hang'>;

export interface EngineDouble {
  readonly url: string;
  readonly requests: DoubleRequest[];
  /** Destroys the sockets of the next `count` requests without answering (connection reset). */
  dropNext(count: number): void;
  /** TCP connections accepted so far (keep-alive reuse keeps this low). */
  connections(): number;
  close(): Promise<void>;
}

export interface EngineDoubleOptions {
  readonly script: ReplyScript;
  /** Names /v1/models lists; a request for another model gets vLLM's 404. Default ['policy']. */
  readonly models?: readonly string[];
  /** Fills vLLM's `text` field; default ''. */
  readonly decode?: (ids: readonly number[]) => string;
  /** Port on 127.0.0.1; default: an ephemeral one. */
  readonly port?: number;
  /** Routes tried before the generation routes (admin endpoints: LoRA, weights, cache); undefined = not handled. */
  readonly routes?: ExtraRoutes;
  /** Keeps every request in `requests` (default); benches that send thousands turn it off. */
  readonly record?: boolean;
}

/** Extra endpoints of a double: the reply for a request, or undefined to fall through. */
export type ExtraRoutes = (
  method: string,
  url: string,
  body: Record<string, unknown>,
) =>
  | { readonly status: number; readonly body: unknown }
  | undefined
  | Promise<{ readonly status: number; readonly body: unknown } | undefined>;

/** Starts the double on 127.0.0.1 and an ephemeral port; it speaks both protocols at once. */
export async function startEngineDouble(options: EngineDoubleOptions): Promise<EngineDouble> {
  const models = options.models ?? ['policy'];
  const requests: DoubleRequest[] = [];
  const sockets = new Set<Socket>();
  let drop = 0;
  let accepted = 0;
  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => send(res, 500, { error: { message: String(error) } }));
  });
  server.on('connection', (socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (drop > 0) {
      drop--;
      req.socket.destroy();
      return;
    }
    if (req.method === 'GET' && req.url === '/health') return send(res, 200, '');
    if (req.method === 'GET' && req.url === '/v1/models') {
      return send(res, 200, {
        object: 'list',
        data: models.map((id) => ({
          id,
          object: 'model',
          created: 0,
          owned_by: 'vllm',
          root: id,
          parent: null,
          max_model_len: 4096,
        })),
      });
    }
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
    const extra = await options.routes?.(req.method ?? 'GET', req.url ?? '/', body);
    if (extra) return send(res, extra.status, extra.body);
    if (req.method === 'POST' && req.url === '/v1/completions') return completions(body, res);
    if (req.method === 'POST' && req.url === '/generate') return generate(body, res);
    send(res, 404, { detail: 'Not Found' });
  }

  async function run(request: DoubleRequest, res: ServerResponse): Promise<Sample[] | null> {
    if (options.record !== false) requests.push(request);
    const samples = [];
    for (let i = 0; i < request.n; i++) {
      const reply = await options.script(request, i);
      if (reply === 'hang') return null;
      if ('status' in reply) {
        send(res, reply.status, reply.body);
        return null;
      }
      samples.push(applyLimits(reply, request));
      request.outputs.push(samples[i].ids);
    }
    return samples;
  }

  async function completions(body: Record<string, unknown>, res: ServerResponse): Promise<void> {
    const model = body.model as string | undefined;
    const request = neutral(
      'vllm',
      '/v1/completions',
      body,
      body.prompt,
      body.max_tokens ?? 16,
      body.stop_token_ids,
      body.n,
      body.seed,
      model,
    );
    if (!models.includes(model ?? '')) {
      requests.push(request);
      return send(res, 404, {
        error: { message: `The model \`${model}\` does not exist.`, type: 'NotFoundError', param: 'model', code: 404 },
      });
    }
    const samples = await run(request, res);
    if (!samples) return;
    send(res, 200, {
      id: `cmpl-${requests.length}`,
      object: 'text_completion',
      created: 1761100000,
      model,
      choices: samples.map((s, index) => ({
        index,
        text: options.decode?.(s.ids) ?? '',
        logprobs: {
          text_offset: s.ids.map((_, i) => i),
          token_logprobs: s.logprobs,
          tokens: s.ids.map((id) => `token_id:${id}`),
          // The sampled token and, for logprobs: k, the engine's k most likely (vLLM's map holds both).
          top_logprobs: s.ids.map((id, i) =>
            Object.fromEntries([
              [`token_id:${id}`, s.logprobs[i]],
              ...s.tops[i]!.slice(0, Number(body.logprobs ?? 0)).map(([t, lp]) => [`token_id:${t}`, lp]),
            ]),
          ),
        },
        finish_reason: s.finish,
        stop_reason: s.matched,
        prompt_logprobs: null,
        prompt_token_ids: request.promptIds,
        token_ids: s.ids,
      })),
      usage: {
        prompt_tokens: request.promptIds.length,
        total_tokens: 0,
        completion_tokens: 0,
        prompt_tokens_details: null,
      },
      kv_transfer_params: null,
    });
  }

  async function generate(body: Record<string, unknown>, res: ServerResponse): Promise<void> {
    const sp = (body.sampling_params ?? {}) as Record<string, unknown>;
    const request = neutral(
      'sglang',
      '/generate',
      body,
      body.input_ids,
      sp.max_new_tokens ?? 128,
      sp.stop_token_ids,
      sp.n,
      sp.sampling_seed,
      body.lora_path as string | undefined,
    );
    if (request.model !== undefined && !models.includes(request.model)) {
      requests.push(request);
      return send(res, 400, { error: { message: `LoRA adapter '${request.model}' is not loaded`, code: 400 } });
    }
    const samples = await run(request, res);
    if (!samples) return;
    const results = samples.map((s, i) => ({
      text: options.decode?.(s.ids) ?? '',
      output_ids: s.ids,
      meta_info: {
        id: `${requests.length}-${i}`,
        finish_reason:
          s.finish === 'length'
            ? { type: 'length', length: request.maxTokens }
            : s.finish === 'abort'
              ? { type: 'abort', message: 'aborted' }
              : { type: 'stop', matched: s.matched },
        prompt_tokens: request.promptIds.length,
        completion_tokens: s.ids.length,
        cached_tokens: 0,
        weight_version: 'default',
        e2e_latency: 0.001,
        output_token_logprobs: s.ids.map((id, k) => [s.logprobs[k], id, null]),
        // the prompt scored from logprob_start_len on (-1: not at all); nothing predicts position 0
        ...(body.return_logprob === true && Number(body.logprob_start_len ?? -1) >= 0
          ? {
              input_token_logprobs: request.promptIds
                .slice(Number(body.logprob_start_len))
                .map((id, k) => [k + Number(body.logprob_start_len) === 0 ? null : doubleLogprob(id), id, null]),
            }
          : {}),
        ...(Number(body.top_logprobs_num ?? 0) > 0
          ? {
              output_top_logprobs: s.tops.map((top) =>
                top.slice(0, Number(body.top_logprobs_num)).map(([id, lp]) => [lp, id, null]),
              ),
            }
          : {}),
      },
    }));
    send(res, 200, request.n > 1 ? results : results[0]);
  }

  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    dropNext(count) {
      drop += count;
    },
    connections: () => accepted,
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** Default logprob of a token: deterministic, distinct per id, always < 0. */
export function doubleLogprob(id: number): number {
  return -((id % 13) + 1) / 16;
}

function neutral(
  protocol: 'vllm' | 'sglang',
  path: string,
  body: Record<string, unknown>,
  prompt: unknown,
  maxTokens: unknown,
  stop: unknown,
  n: unknown,
  seed: unknown,
  model: string | undefined,
): DoubleRequest {
  return {
    protocol,
    path,
    body,
    model,
    promptIds: Array.isArray(prompt) ? (prompt as number[]) : [],
    maxTokens: Number(maxTokens),
    stopTokenIds: Array.isArray(stop) ? (stop as number[]) : [],
    n: typeof n === 'number' ? n : 1,
    seed: typeof seed === 'number' ? seed : undefined,
    outputs: [],
  };
}

function applyLimits(reply: ScriptedReply, request: DoubleRequest): Sample {
  const all = [...reply.tokenIds];
  const lps = reply.logprobs ? [...reply.logprobs] : all.map(doubleLogprob);
  const stopAt = all.findIndex((id) => request.stopTokenIds.includes(id));
  let end = stopAt >= 0 ? stopAt + 1 : all.length;
  let finish: string = stopAt >= 0 ? 'stop' : (reply.finishReason ?? 'stop');
  if (end > request.maxTokens) {
    end = request.maxTokens;
    finish = 'length';
  }
  return {
    ids: all.slice(0, end),
    logprobs: lps.slice(0, end),
    tops: all.slice(0, end).map((_, i) => [...(reply.topTokens?.[i] ?? [])]),
    finish,
    matched: finish === 'stop' && stopAt >= 0 ? all[stopAt] : null,
  };
}

/** One answered sample after stop tokens and max_tokens are applied. */
interface Sample {
  readonly ids: number[];
  readonly logprobs: number[];
  readonly tops: (readonly [number, number])[][];
  readonly finish: string;
  readonly matched: number | null;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, {
    'content-type': typeof body === 'string' ? 'text/plain' : 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

/**
 * A script for protocol tests: 40 pseudo-random tokens below `vocab` ending in `stopId`, a pure function
 * of the seed and sample index (random when no seed is sent), like a seeded sampler.
 */
export function seededScript(vocab: number, stopId: number): ReplyScript {
  return (request, sample) => {
    let state =
      request.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : request.seed * 7919 + sample * 104729 + 1;
    const ids = Array.from({ length: 39 }, () => {
      state = (state * 1103515245 + 12345) % 2 ** 31;
      return state % vocab;
    });
    return { tokenIds: [...ids, stopId] };
  };
}
