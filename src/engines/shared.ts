import { z } from 'zod';
import { ProviderError } from '../errors/index.js';
import { probe, requestJson, type HttpTarget } from '../util/http.js';
import type { Engine, EngineClientOptions, Generation, ProtocolRequest, SamplingParams } from './types.js';

/** HTTP settings of a client from its options, with the defaults documented on EngineClientOptions. */
export function engineTarget(name: string, options: EngineClientOptions): HttpTarget {
  return {
    name: options.name ?? name,
    baseUrl: options.baseUrl,
    timeoutMs: options.timeoutMs ?? 120_000,
    retries: options.retries ?? 3,
    backoffMs: options.backoffMs ?? 250,
  };
}

/** How one protocol samples: the request for the current model name, parsed into generations. */
export type SampleFn = (
  model: string,
  promptIds: readonly number[],
  params: SamplingParams,
  signal: AbortSignal | undefined,
) => Promise<Generation[]>;

/** The parts every protocol client shares: model naming, n=1 generate, health on /health, /v1/models. */
export function protocolClient(
  kind: ProtocolRequest['kind'],
  options: EngineClientOptions,
  target: HttpTarget,
  sample: SampleFn,
): Engine {
  let model = options.model;
  const send: SampleFn = (name, promptIds, { exchange, ...params }, signal) =>
    exchange
      ? exchange({ kind, target, model: name, baseModel: options.model, params }, signal)
      : sample(name, promptIds, params, signal);
  return {
    kind,
    baseUrl: options.baseUrl,
    get model() {
      return model;
    },
    async generate(promptIds, params, signal) {
      const [first] = await send(model, promptIds, { ...params, n: 1 }, signal);
      return first;
    },
    generateN: (promptIds, params, signal) => send(model, promptIds, params, signal),
    health: () => probe(target, '/health'),
    models: () => modelList(target),
    setModel(name) {
      model = name;
    },
  };
}

const ModelsResponse = z.object({ data: z.array(z.object({ id: z.string() })) });

/** `GET /v1/models` ids (vLLM lists LoRA adapters as extra entries). @throws ProviderError. */
export async function modelList(target: HttpTarget): Promise<string[]> {
  const parsed = ModelsResponse.safeParse(await requestJson(target, 'GET', '/v1/models'));
  if (!parsed.success)
    throw new ProviderError(`${target.name} at ${target.baseUrl}: /v1/models reply has no data[].id`);
  return parsed.data.data.map((m) => m.id);
}

/** Element-wise equality of an echoed prompt with the one sent. */
export function samePrompt(echoed: readonly number[], sent: readonly number[]): boolean {
  if (echoed.length !== sent.length) return false;
  for (let i = 0; i < sent.length; i++) if (echoed[i] !== sent[i]) return false;
  return true;
}
