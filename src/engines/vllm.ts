import { z } from 'zod';
import { ProviderError } from '../errors/index.js';
import { requestJson, type HttpTarget } from '../util/http.js';
import { formatZodIssues } from '../util/zod-issues.js';
import { engineTarget, protocolClient, type SampleFn, samePrompt } from './shared.js';
import type { Engine, EngineClientOptions, Generation, SamplingParams, TokenLogprob } from './types.js';

// The per-token arrays are checked element by element where they are read (toGeneration, samePrompt,
// topAlternatives), so the schema only asserts they are arrays: validating them here copied the echoed
// prompt, hundreds to thousands of ids, on every agent turn.
const list = <T>(what: string) => z.custom<T[]>(Array.isArray, { message: `expected an array of ${what}` });
const Choice = z.object({
  index: z.number(),
  finish_reason: z.string().nullable(),
  token_ids: list<number>('token ids').nullable().optional(),
  prompt_token_ids: list<number>('token ids').nullable().optional(),
  logprobs: z
    .object({
      token_logprobs: list<number | null>('logprobs'),
      tokens: list<string>('tokens').optional(),
      top_logprobs: list<Record<string, number> | null>('logprob maps').nullable().optional(),
    })
    .nullable(),
});
const CompletionResponse = z.object({ choices: z.array(Choice) });

/**
 * Client of vLLM's OpenAI-compatible server, token in / token out: `POST /v1/completions` with a
 * token-id prompt, `return_token_ids` (vLLM >= 0.10.2) and sampled-token logprobs keyed by token id.
 * The bundled trainer's embedded engine speaks the same subset.
 */
export function createVllmClient(options: EngineClientOptions): Engine {
  const target = engineTarget('vllm', options);
  return protocolClient('vllm', options, target, vllmSample(target));
}

/** One `/v1/completions` exchange with `target`: the request sent, the reply checked and parsed. */
export function vllmSample(target: HttpTarget): SampleFn {
  return async (model, promptIds, params, signal) => {
    const reply = await requestJson(
      target,
      'POST',
      '/v1/completions',
      completionRequest(model, promptIds, params),
      signal,
    );
    const parsed = CompletionResponse.safeParse(reply);
    if (!parsed.success) throw malformed(target, formatZodIssues(parsed.error, 'reply'));
    const choices = [...parsed.data.choices].sort((a, b) => a.index - b.index);
    if (choices.length !== (params.n ?? 1))
      throw malformed(target, `asked for ${params.n ?? 1} choices, got ${choices.length}`);
    return choices.map((choice) => toGeneration(target, choice, promptIds, params.topLogprobs ?? 0));
  };
}

/** The `/v1/completions` body atk sends for one token-id prompt. */
export function completionRequest(
  model: string,
  promptIds: readonly number[],
  params: SamplingParams,
): Record<string, unknown> {
  return {
    model,
    prompt: promptIds,
    max_tokens: params.maxTokens,
    temperature: params.temperature,
    top_p: params.topP,
    top_k: params.topK,
    n: params.n ?? 1,
    ...(params.seed === undefined ? {} : { seed: params.seed }),
    ...(params.stopTokenIds?.length ? { stop_token_ids: params.stopTokenIds } : {}),
    // 0 still returns the sampled token's logprob; k adds the k most likely tokens at each position.
    logprobs: params.topLogprobs ?? 0,
    return_token_ids: true,
    return_tokens_as_token_ids: true,
    skip_special_tokens: false,
    spaces_between_special_tokens: false,
    include_stop_str_in_output: true,
    stream: false,
  };
}

function toGeneration(
  target: HttpTarget,
  choice: z.infer<typeof Choice>,
  promptIds: readonly number[],
  topK: number,
): Generation {
  const tokenIds = choice.token_ids;
  if (!tokenIds) throw malformed(target, 'no token_ids in the reply', 'atk needs vLLM >= 0.10.2 (return_token_ids)');
  if (!tokenIds.every(Number.isInteger)) throw malformed(target, 'token_ids holds a value that is not a token id');
  if (choice.prompt_token_ids && !samePrompt(choice.prompt_token_ids, promptIds))
    throw malformed(target, 'prompt_token_ids differ from the prompt sent');
  const logprobs = choice.logprobs?.token_logprobs;
  if (!logprobs || logprobs.length !== tokenIds.length) {
    throw malformed(target, `${tokenIds.length} tokens but ${logprobs?.length ?? 'no'} logprobs`);
  }
  const tokens = choice.logprobs?.tokens;
  if (tokens) {
    tokens.forEach((token, i) => {
      if (token !== `token_id:${tokenIds[i]}`)
        throw malformed(
          target,
          `logprob ${i} is for '${token}', not token_id:${tokenIds[i]}`,
          'start vLLM with --return-tokens-as-token-ids',
        );
    });
  }
  const finish = choice.finish_reason;
  if (finish !== 'stop' && finish !== 'length' && finish !== 'abort')
    throw malformed(target, `finish_reason ${JSON.stringify(finish)}`);
  // vLLM clamps -inf to -9999; a null here means the position had no sampled-token logprob at all.
  if (logprobs.some((lp) => lp === null)) throw malformed(target, 'a generated token has a null logprob');
  if (!logprobs.every((lp) => typeof lp === 'number')) throw malformed(target, 'token_logprobs holds a non-number');
  const generation: Generation = { tokenIds, logprobs: logprobs as number[], finishReason: finish };
  return topK > 0 ? { ...generation, topLogprobs: topAlternatives(target, choice, tokenIds.length, topK) } : generation;
}

/**
 * The k most likely tokens of each position from vLLM's `{"token_id:N": logprob}` maps; vLLM adds the
 * sampled token to a map when it is not among the k, so each map is sorted and cut to k.
 */
function topAlternatives(
  target: HttpTarget,
  choice: z.infer<typeof Choice>,
  length: number,
  topK: number,
): TokenLogprob[][] {
  const maps = choice.logprobs?.top_logprobs;
  if (!maps || maps.length !== length)
    throw malformed(target, `asked for top logprobs of ${length} tokens, got ${maps?.length ?? 'none'}`);
  return maps.map((map, i) =>
    Object.entries(map ?? {})
      .map(([key, logprob]) => {
        const id = /^token_id:(\d+)$/.exec(key)?.[1];
        if (id === undefined)
          throw malformed(
            target,
            `top logprob key '${key}' at ${i} is not token_id:N`,
            'start vLLM with --return-tokens-as-token-ids',
          );
        if (typeof logprob !== 'number') throw malformed(target, `top logprob '${key}' at ${i} is not a number`);
        return { id: Number(id), logprob };
      })
      .sort((a, b) => b.logprob - a.logprob)
      .slice(0, topK),
  );
}

function malformed(
  target: HttpTarget,
  what: string,
  hint = 'atk needs vLLM >= 0.10.2 (/v1/completions with return_token_ids)',
): ProviderError {
  return new ProviderError(`${target.name} at ${target.baseUrl} sent an unusable reply: ${what}`, { hint });
}
