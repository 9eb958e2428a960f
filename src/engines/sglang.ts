import { z } from 'zod';
import { ProviderError } from '../errors/index.js';
import { requestJson, type HttpTarget } from '../util/http.js';
import { formatZodIssues } from '../util/zod-issues.js';
import { engineTarget, protocolClient, type SampleFn } from './shared.js';
import type { Engine, EngineClientOptions, Generation, SamplingParams } from './types.js';

const GenerateResult = z.object({
  output_ids: z.array(z.number()),
  meta_info: z
    .object({
      finish_reason: z.object({ type: z.string() }).passthrough().nullable(),
      output_token_logprobs: z.array(z.tuple([z.number().nullable(), z.number()]).rest(z.unknown())).optional(),
      output_top_logprobs: z
        .array(z.array(z.tuple([z.number().nullable(), z.number()]).rest(z.unknown())).nullable())
        .optional(),
    })
    .passthrough(),
});

/**
 * Client of SGLang's native `POST /generate` with `input_ids` and `return_logprob`. `setModel(name)` with
 * a name other than the served base model routes requests to that LoRA adapter (`lora_path`).
 */
export function createSglangClient(options: EngineClientOptions): Engine {
  const target = engineTarget('sglang', options);
  return protocolClient('sglang', options, target, sglangSample(target, options.model));
}

/** One `/generate` exchange with `target` serving `baseModel`: the request sent, the reply checked and parsed. */
export function sglangSample(target: HttpTarget, baseModel: string): SampleFn {
  return async (model, promptIds, params, signal) => {
    const n = params.n ?? 1;
    const body = { ...generateRequest(promptIds, params), ...(model === baseModel ? {} : { lora_path: model }) };
    const reply = await requestJson(target, 'POST', '/generate', body, signal);
    // n > 1 turns the request into a batch: the reply is then an array, one entry per sample.
    const results = Array.isArray(reply) ? reply : [reply];
    if (results.length !== n) throw malformed(target, `asked for ${n} samples, got ${results.length}`);
    return results.map((result) => toGeneration(target, result, params.topLogprobs ?? 0));
  };
}

function generateRequest(promptIds: readonly number[], params: SamplingParams): Record<string, unknown> {
  return {
    input_ids: promptIds,
    sampling_params: {
      max_new_tokens: params.maxTokens,
      temperature: params.temperature,
      top_p: params.topP,
      top_k: params.topK,
      n: params.n ?? 1,
      ...(params.seed === undefined ? {} : { sampling_seed: params.seed }),
      ...(params.stopTokenIds?.length ? { stop_token_ids: params.stopTokenIds } : {}),
      skip_special_tokens: false,
      spaces_between_special_tokens: false,
      no_stop_trim: true,
    },
    return_logprob: true,
    logprob_start_len: -1,
    top_logprobs_num: params.topLogprobs ?? 0,
    stream: false,
  };
}

function toGeneration(target: HttpTarget, value: unknown, topK: number): Generation {
  const parsed = GenerateResult.safeParse(value);
  if (!parsed.success) throw malformed(target, formatZodIssues(parsed.error, 'reply'));
  const { output_ids: tokenIds, meta_info: meta } = parsed.data;
  const entries = meta.output_token_logprobs;
  if (!entries || entries.length !== tokenIds.length)
    throw malformed(target, `${tokenIds.length} tokens but ${entries?.length ?? 'no'} logprobs`);
  const logprobs = entries.map(([logprob, id], i) => {
    if (id !== tokenIds[i]) throw malformed(target, `logprob ${i} is for token ${id}, not ${tokenIds[i]}`);
    if (logprob === null) throw malformed(target, `generated token ${i} has a null logprob`);
    return logprob;
  });
  const type = meta.finish_reason?.type;
  if (type !== 'stop' && type !== 'length' && type !== 'abort')
    throw malformed(target, `finish_reason ${JSON.stringify(meta.finish_reason)}`);
  if (topK === 0) return { tokenIds, logprobs, finishReason: type };
  // Entries are [logprob, token_id, text]; a -inf logprob (outside top_p) comes back as null and is left out.
  const tops = meta.output_top_logprobs;
  if (!tops || tops.length !== tokenIds.length)
    throw malformed(target, `asked for top logprobs of ${tokenIds.length} tokens, got ${tops?.length ?? 'none'}`);
  const topLogprobs = tops.map((entries) =>
    (entries ?? [])
      .flatMap(([logprob, id]) => (logprob === null ? [] : [{ id, logprob }]))
      .sort((a, b) => b.logprob - a.logprob)
      .slice(0, topK),
  );
  return { tokenIds, logprobs, finishReason: type, topLogprobs };
}

function malformed(target: HttpTarget, what: string): ProviderError {
  return new ProviderError(`${target.name} at ${target.baseUrl} sent an unusable reply: ${what}`, {
    hint: 'check the SGLang version (atk speaks the 0.5 /generate API)',
  });
}
