import { tool } from '@strands-agents/sdk';
import { afterEach, beforeAll, describe, expect, test } from 'vitest';
import { z } from 'zod';
import { startEngineDouble, type EngineDouble } from '../__fixtures__/engine-double.js';
import { doubleExchanges, expectTitoInvariants } from '../__fixtures__/tito-invariants.js';
import { QWEN3_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import { createVllmClient } from '../engines/vllm.js';
import { loadModelTokenizer, type ModelTokenizer } from '../tokens/model-tokenizer.js';
import { runEpisode, type AgentSpec, type EpisodeResult } from './episode.js';

// Model outputs that once broke an episode or the step around it (issue 14), run as whole episodes.
const calculator = tool({
  name: 'calculator',
  description: 'Evaluate',
  inputSchema: z.object({ expression: z.string() }),
  callback: ({ expression }) => `= ${expression.length}`,
});
const spec: AgentSpec = {
  tools: [calculator],
  maxTurns: 2,
  maxNewTokens: 40_000,
  sampling: { temperature: 1, topP: 1, topK: -1 },
  toolCallFormat: 'hermes',
};
const task = { id: 't', prompt: 'Compute.', data: {} };

let qwen: ModelTokenizer;
let double: EngineDouble | undefined;
beforeAll(async () => {
  qwen = await loadModelTokenizer(QWEN3_TOKENIZER_DIR);
});
afterEach(() => double?.close());

async function episodeOf(turns: string[]): Promise<{ result: EpisodeResult; d: EngineDouble }> {
  const d = await startEngineDouble({
    script: () => ({ tokenIds: qwen.encode(turns[Math.min(d.requests.length - 1, turns.length - 1)]!) }),
  });
  double = d;
  const result = await runEpisode({
    task,
    spec,
    engine: createVllmClient({ baseUrl: d.url, model: 'policy' }),
    tokenizer: qwen,
    policyVersion: 0,
    timeoutMs: 30_000,
  });
  return { result, d };
}

describe('model output defects', () => {
  test('returns arguments nested 5,000 levels deep as a bad_call error result, not a thrown RangeError', async () => {
    const deep = `<tool_call>\n{"name": "calculator", "arguments": {"expression": ${'['.repeat(5000)}${']'.repeat(5000)}}}\n</tool_call><|im_end|>`;
    const { result, d } = await episodeOf([deep, 'Sorry.<|im_end|>']);
    expectTitoInvariants(result, doubleExchanges(d));
    expect([result.finishReason, result.error, result.stats.toolErrorsByKind]).toStrictEqual([
      'endTurn',
      undefined,
      { bad_call: 1 },
    ]);
    expect(result.toolCalls.map((c) => c.output)).toStrictEqual([
      "Error: the arguments of the call to 'calculator' nest deeper than 64 levels",
    ]);
  });

  test('returns a call whose arguments hold </think> as a call, with no reasoning split off', async () => {
    const turn =
      '<tool_call>\n{"name": "calculator", "arguments": {"expression": "</think>1+1"}}\n</tool_call><|im_end|>';
    const { result } = await episodeOf([turn, 'Done.<|im_end|>']);
    expect(result.toolCalls).toStrictEqual([
      { name: 'calculator', input: { expression: '</think>1+1' }, status: 'success', output: '= 11' },
    ]);
    expect(result.finalText).toBe('Done.');
  });

  test('returns an unknown tool error that echoes at most 200 characters of a 20,000-character name', async () => {
    const name = 'x'.repeat(20_000);
    const { result } = await episodeOf([
      `<tool_call>\n{"name": "${name}", "arguments": {}}\n</tool_call><|im_end|>`,
      'Sorry.<|im_end|>',
    ]);
    const shown = result.toolCalls[0]?.output;
    expect(shown).toBe(
      `Error: unknown tool '${'x'.repeat(200)}... [19800 more characters]'; available tools: calculator`,
    );
    expect(result.stats.toolErrorsByKind).toStrictEqual({ unknown_tool: 1 });
  });
});
