import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startEmbeddedEngine, TINY_ARITH_DIR, type EmbeddedEngine } from '../__fixtures__/embedded-engine.js';
import { expectTitoInvariants, recordingEngine } from '../__fixtures__/tito-invariants.js';
import { ArithOptions, generateArith } from '../datasets/arith.js';
import { loadModelTokenizer, type ModelTokenizer } from '../tokens/model-tokenizer.js';
import { calculatorTool } from '../tools/calculator.js';
import { runEpisode, type AgentSpec, type EpisodeResult } from './episode.js';

// The episode suite's token invariants (src/__fixtures__/tito-invariants.ts) against the real embedded
// engine: the trainer process serving the shipped, warm-started models/tiny-arith, which writes Hermes
// calculator calls on arith prompts. What the engine returned is recorded by a wrapper around the client.
const spec: AgentSpec = {
  tools: [calculatorTool()],
  maxTurns: 3,
  maxNewTokens: 32,
  sampling: { temperature: 0, topP: 1, topK: -1 },
  toolCallFormat: 'hermes',
};
const tasks = generateArith('test', ArithOptions.parse({ max_digits: 2, test_size: 4 }));
let embedded: EmbeddedEngine;
let tokenizer: ModelTokenizer;

beforeAll(async () => {
  [embedded, tokenizer] = await Promise.all([startEmbeddedEngine('pretrained'), loadModelTokenizer(TINY_ARITH_DIR)]);
}, 60_000);
afterAll(() => embedded?.stop());

/** One episode through a recording wrapper; the invariants are checked on it before it is returned. */
async function checkedEpisode(task: (typeof tasks)[number], agentSpec: AgentSpec = spec): Promise<EpisodeResult> {
  const recorded = recordingEngine(embedded.engine);
  const result = await runEpisode({
    task,
    spec: agentSpec,
    engine: recorded.engine,
    tokenizer,
    policyVersion: 0,
    timeoutMs: 30_000,
  });
  expect(result.error).toBeUndefined();
  expectTitoInvariants(result, recorded.exchanges);
  return result;
}

describe('runEpisode on the embedded engine', () => {
  test('returns greedy calculator episodes whose model tokens are exactly what the engine generates for those prompts', async () => {
    const results = await Promise.all(tasks.map((task) => checkedEpisode(task)));
    const withTool = results.filter((r) => r.toolCalls.length > 0);
    expect(withTool.length).toBeGreaterThan(0);
    for (const result of withTool) {
      expect(result.trajectory.segments.map((s) => s.source).slice(0, 3)).toStrictEqual(['prompt', 'model', 'tool']);
      const tool = result.trajectory.segments[2]!;
      expect(tokenizer.decode(result.trajectory.ids.slice(tool.start, tool.start + tool.length))).toContain(
        `<tool_response>\n${result.toolCalls[0]!.output}\n</tool_response>`,
      );
    }
    // Independently of the wrapper: asking the engine again for each model segment's prompt (the
    // trajectory up to it) at temperature 0 gives that segment's tokens.
    const t = withTool[0]!.trajectory;
    for (const s of t.segments.filter((seg) => seg.source === 'model')) {
      const again = await embedded.engine.generate(t.ids.slice(0, s.start), {
        maxTokens: s.length,
        temperature: 0,
        topP: 1,
        topK: -1,
        stopTokenIds: tokenizer.eosTokenIds,
      });
      expect(again.tokenIds).toStrictEqual(t.ids.slice(s.start, s.start + s.length));
    }
  });

  test('returns sampled episodes, run concurrently, that keep the invariants', async () => {
    const sampled = { ...spec, sampling: { temperature: 1, topP: 1, topK: -1, seed: 11 } };
    const results = await Promise.all(tasks.map((task) => checkedEpisode(task, sampled)));
    expect(results.every((r) => r.trajectory.segments.some((s) => s.source === 'model'))).toBe(true);
  });

  test('returns truncated when the engine stops at max_new_tokens', async () => {
    const result = await checkedEpisode(tasks[0]!, { ...spec, maxNewTokens: 6 });
    expect([result.finishReason, result.stats.truncated, result.trajectory.segments.at(-1)]).toStrictEqual([
      'truncated',
      true,
      expect.objectContaining({ source: 'model', length: 6, finishReason: 'length' }),
    ]);
  });
});
