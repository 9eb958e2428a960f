// The token-in/token-out invariants every episode must keep, checked against what the engine really
// received and returned: the engine double's request log, or a recording wrapper around any Engine
// client (the embedded engine). One helper, so every engine runs the same checks.
import { expect } from 'vitest';
import type { Engine } from '../engines/types.js';
import type { EpisodeResult } from '../rollout/episode.js';
import { doubleLogprob, type EngineDouble } from './engine-double.js';

/** One engine call of an episode: the prompt it was sent and what it answered. */
export interface EngineExchange {
  readonly promptIds: readonly number[];
  /** Empty when the call got no answer (failure, hang). */
  readonly tokenIds: readonly number[];
  readonly logprobs: readonly number[];
}

/** The double's requests as exchanges (its logprobs are the default per-token ones). */
export function doubleExchanges(d: EngineDouble): EngineExchange[] {
  return d.requests.map((r) => {
    const ids = r.outputs[0] ?? [];
    return { promptIds: r.promptIds, tokenIds: ids, logprobs: ids.map(doubleLogprob) };
  });
}

/** Wraps an engine so every `generate` is logged, in call order, with copies of what it returned. */
export function recordingEngine(engine: Engine): { readonly engine: Engine; readonly exchanges: EngineExchange[] } {
  const exchanges: EngineExchange[] = [];
  // The prototype keeps the client's other members (the `model` getter, setModel) working.
  const recorded = Object.create(engine) as Engine & { generate: Engine['generate'] };
  recorded.generate = async (promptIds, params, signal) => {
    const prompt = [...promptIds];
    const g = await engine.generate(promptIds, params, signal);
    exchanges.push({ promptIds: prompt, tokenIds: [...g.tokenIds], logprobs: [...g.logprobs] });
    return g;
  };
  return { engine: recorded, exchanges };
}

/**
 * Mask is 1 exactly on engine tokens (in engine order), each model segment is one engine answer and
 * logprobs line up with them; no engine token was ever re-encoded (each prompt extends the previous
 * prompt + output verbatim); the trajectory is the last prompt + the last output; counters add up.
 */
export function expectTitoInvariants(result: EpisodeResult, exchanges: readonly EngineExchange[]): void {
  const t = result.trajectory;
  const outputs = exchanges.map((x) => [...x.tokenIds]);
  const mask = t.mask();
  expect(t.ids.filter((_, i) => mask[i] === 1)).toStrictEqual(outputs.flat());
  expect(t.modelLogprobs).toStrictEqual(exchanges.flatMap((x) => [...x.logprobs]));
  // Each model segment holds one engine answer verbatim, at its place among the environment's tokens.
  expect(
    t.segments.filter((s) => s.source === 'model').map((s) => t.ids.slice(s.start, s.start + s.length)),
  ).toStrictEqual(outputs.filter((o) => o.length > 0));
  for (let i = 1; i < exchanges.length; i++) {
    const before = [...exchanges[i - 1]!.promptIds, ...outputs[i - 1]!];
    expect(exchanges[i]!.promptIds.slice(0, before.length)).toStrictEqual(before);
  }
  const last = exchanges.at(-1);
  if (last && last.tokenIds.length > 0) expect(t.ids).toStrictEqual([...last.promptIds, ...last.tokenIds]);
  expect(result.stats.generatedTokens).toBe(mask.reduce((a, b) => a + b, 0));
  expect(result.stats.promptTokens + result.stats.generatedTokens).toBe(t.length);
  const { turns, toolCalls, toolErrors, truncated } = result.stats;
  expect(t.counters).toStrictEqual({ turns, toolCalls, toolErrors, truncations: truncated ? 1 : 0 });
}
