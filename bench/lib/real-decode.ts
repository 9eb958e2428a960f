// Raw generation through /v1/completions for `npm run bench real`: the same token-id prompts sent to each engine
// as atk sends them (atk's own request body, greedy, plus ignore_eos so every request generates the same number of
// tokens), a fixed number in flight; tokens/s by the clock and per CPU second of the server's process tree, and
// the token ids, to check that the engines generate the same tokens.
import type { ModelTokenizer } from '../../src/tokens/index.js';
import { completionRequest } from '../../src/engines/vllm.js';
import { requestJson, requestText } from '../../src/util/http.js';
import { type EngineServer, treeCpuSeconds } from './real-servers.js';

/** One batch of completions: how long it took and what came back, prompt by prompt. */
export interface CompletionsRun {
  readonly seconds: number;
  readonly cpuSeconds: number;
  readonly promptTokens: number;
  readonly generatedTokens: number;
  readonly tokenIds: readonly (readonly number[])[];
  readonly logprobs: readonly (readonly number[])[];
}

const TOPICS = [
  'a lighthouse keeper',
  'a river that runs uphill',
  'the last bookshop in a city',
  'a robot learning to paint',
  'two rival bakers',
  'a map with a missing island',
  'an orchestra of insects',
  'a train that never stops',
];
const ASKS = [
  'Write a short story about',
  'Describe, as a travel guide would,',
  'Explain to a ten-year-old',
  'Write a letter from the point of view of',
  'List the surprising facts a historian might find about',
  'Write the opening scene of a play about',
  'Summarise, as a news report,',
  'Compose a diary entry about',
];
const DETAIL =
  'Mention the weather, one smell and one sound, give every person a name, keep the tone warm but a little sad, ' +
  'and end with a question the reader cannot answer. Use simple words and full sentences.';

/**
 * `count` distinct requests of about 96 tokens: with the chat template (what atk sends: the model's default system
 * prompt shared by all), or the bare text, which shares no prefix (what a prefill figure must not get for free).
 */
export function benchPrompts(tokenizer: ModelTokenizer, count: number, chat: boolean): number[][] {
  return Array.from({ length: count }, (_, i) => {
    const text = `${ASKS[i % ASKS.length]} ${TOPICS[Math.floor(i / ASKS.length) % TOPICS.length]} (number ${i + 1}). ${DETAIL}`;
    return chat
      ? tokenizer.encode(tokenizer.renderChat([{ role: 'user', content: text }], { addGenerationPrompt: true }))
      : tokenizer.encode(`${i + 1}. ${text}`);
  });
}

/** `prompts` sent with `inFlight` requests at a time, `maxTokens` greedy tokens each, after the prefix cache is reset. */
export async function completions(
  server: EngineServer,
  prompts: readonly (readonly number[])[],
  inFlight: number,
  maxTokens: number,
): Promise<CompletionsRun> {
  const target = { name: server.name, baseUrl: server.url, timeoutMs: 3_600_000, retries: 0, backoffMs: 0 };
  await requestText(target, 'POST', '/reset_prefix_cache', undefined);
  const params = { maxTokens, temperature: 0, topP: 1, topK: -1 };
  const tokenIds: number[][] = [];
  const logprobs: number[][] = [];
  let next = 0;
  const cpu = treeCpuSeconds(server.pid);
  const start = performance.now();
  const worker = async (): Promise<void> => {
    while (next < prompts.length) {
      const i = next++;
      const body = { ...completionRequest('policy', prompts[i]!, params), ignore_eos: true };
      const reply = (await requestJson(target, 'POST', '/v1/completions', body)) as {
        choices: { token_ids: number[]; logprobs: { token_logprobs: number[] } }[];
      };
      tokenIds[i] = reply.choices[0]!.token_ids;
      logprobs[i] = reply.choices[0]!.logprobs.token_logprobs;
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, prompts.length) }, worker));
  return {
    seconds: (performance.now() - start) / 1000,
    cpuSeconds: treeCpuSeconds(server.pid) - cpu,
    promptTokens: prompts.reduce((a, p) => a + p.length, 0),
    generatedTokens: tokenIds.reduce((a, t) => a + t.length, 0),
    tokenIds,
    logprobs,
  };
}

/** How far two engines' completions of the same prompts agree: identical ones, and the largest logprob gap. */
export function agreement(a: CompletionsRun, b: CompletionsRun): string {
  let same = 0;
  let gap = 0;
  for (let i = 0; i < a.tokenIds.length; i++) {
    const x = a.tokenIds[i]!;
    const y = b.tokenIds[i]!;
    if (x.length === y.length && x.every((t, j) => t === y[j])) same++;
    let j = 0;
    while (j < x.length && j < y.length && x[j] === y[j]) {
      gap = Math.max(gap, Math.abs(a.logprobs[i]![j]! - b.logprobs[i]![j]!));
      j++;
    }
  }
  return `${same}/${a.tokenIds.length} token-identical, logprobs within ${gap.toExponential(1)}`;
}
