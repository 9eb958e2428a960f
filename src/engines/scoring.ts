import { z } from 'zod';
import { ProviderError } from '../errors/index.js';
import { requestJson, type HttpTarget } from '../util/http.js';
import { formatZodIssues } from '../util/zod-issues.js';
import { engineTarget, samePrompt } from './shared.js';
import type { EngineClientOptions } from './types.js';

/**
 * An engine asked for the logprobs of a token sequence it did not sample (a teacher scoring a student's
 * episode): `log p(ids[t] | ids[:t])` for each position t, null at t = 0, which nothing predicts.
 */
export interface TokenScorer {
  readonly kind: 'vllm' | 'sglang';
  readonly baseUrl: string;
  /** @throws ProviderError on HTTP errors, timeouts or a reply that does not score `ids` token by token. */
  score(ids: readonly number[], signal?: AbortSignal): Promise<(number | null)[]>;
}

/**
 * Scorers by protocol, as `engineProtocols` holds the samplers. `baseModel` is the served base model's name
 * when `options.model` names a LoRA adapter (SGLang routes to an adapter by `lora_path`, vLLM by the name).
 */
export const tokenScorers: Readonly<
  Record<TokenScorer['kind'], (options: EngineClientOptions, baseModel?: string) => TokenScorer>
> = {
  vllm: createVllmScorer,
  sglang: createSglangScorer,
};

// vLLM: [null, {"<id>": {"logprob", "rank", "decoded_token"}}, ...], one map per prompt token.
const VllmScore = z.object({
  choices: z
    .array(
      z.object({
        prompt_logprobs: z
          .array(z.record(z.string(), z.object({ logprob: z.number() }).passthrough()).nullable())
          .nullable()
          .optional(),
      }),
    )
    .min(1),
});

/**
 * vLLM's `POST /v1/completions` with `prompt_logprobs: 0` (each prompt token's own logprob) and one
 * generated token that is thrown away: vLLM scores a prompt only while generating from it. The embedded
 * engine speaks the same subset.
 */
export function createVllmScorer(options: EngineClientOptions): TokenScorer {
  const target = engineTarget('vllm', options);
  return {
    kind: 'vllm',
    baseUrl: options.baseUrl,
    async score(ids, signal) {
      const body = {
        model: options.model,
        prompt: ids,
        max_tokens: 1,
        temperature: 0,
        prompt_logprobs: 0,
        return_tokens_as_token_ids: true,
        stream: false,
      };
      const parsed = VllmScore.safeParse(await requestJson(target, 'POST', '/v1/completions', body, signal));
      if (!parsed.success) throw unusable(target, formatZodIssues(parsed.error, 'reply'));
      const maps = parsed.data.choices[0]!.prompt_logprobs;
      if (!maps || maps.length !== ids.length)
        throw unusable(target, `scored ${maps?.length ?? 'no'} positions of a ${ids.length}-token sequence`);
      return maps.map((map, t) => {
        if (t === 0) return null;
        const entry = map?.[String(ids[t])];
        if (entry === undefined) throw unusable(target, `prompt_logprobs[${t}] has no entry for token ${ids[t]}`);
        return entry.logprob;
      });
    },
  };
}

// SGLang: meta_info.input_token_logprobs = [[logprob | null, token_id, text | null], ...] from logprob_start_len.
const SglangScore = z.object({
  meta_info: z
    .object({
      input_token_logprobs: z.array(z.tuple([z.number().nullable(), z.number()]).rest(z.unknown())),
    })
    .passthrough(),
});

/**
 * SGLang's native `POST /generate` with `return_logprob` and `logprob_start_len: 0`: the input tokens'
 * logprobs from the first position on (null there), with one generated token thrown away; a LoRA adapter
 * (a `model` other than `baseModel`) by its `lora_path`, as the SGLang client samples from one.
 */
export function createSglangScorer(options: EngineClientOptions, baseModel = options.model): TokenScorer {
  const target = engineTarget('sglang', options);
  const adapter = options.model === baseModel ? {} : { lora_path: options.model };
  return {
    kind: 'sglang',
    baseUrl: options.baseUrl,
    async score(ids, signal) {
      const body = {
        input_ids: ids,
        sampling_params: { max_new_tokens: 1, temperature: 0 },
        return_logprob: true,
        logprob_start_len: 0,
        top_logprobs_num: 0,
        stream: false,
        ...adapter,
      };
      const parsed = SglangScore.safeParse(await requestJson(target, 'POST', '/generate', body, signal));
      if (!parsed.success) throw unusable(target, formatZodIssues(parsed.error, 'reply'));
      const entries = parsed.data.meta_info.input_token_logprobs;
      if (
        !samePrompt(
          entries.map(([, id]) => id),
          ids,
        )
      )
        throw unusable(target, `input_token_logprobs score other tokens than the ${ids.length} sent`);
      return entries.map(([logprob, id], t) => {
        if (t > 0 && logprob === null) throw unusable(target, `input token ${t} (${id}) has a null logprob`);
        return t === 0 ? null : logprob;
      });
    },
  };
}

function unusable(target: HttpTarget, what: string): ProviderError {
  return new ProviderError(`${target.name} at ${target.baseUrl} could not score a sequence: ${what}`, {
    hint:
      target.name === 'vllm'
        ? 'the teacher engine must answer /v1/completions with prompt_logprobs (vLLM >= 0.10.2 or the embedded engine)'
        : 'the teacher engine must answer /generate with return_logprob and logprob_start_len (SGLang 0.5)',
  });
}
