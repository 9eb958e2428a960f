import { tool } from '@strands-agents/sdk';
import { afterEach, beforeAll, describe, expect, test } from 'vitest';
import { z } from 'zod';
import { startEngineDouble, type EngineDouble } from '../__fixtures__/engine-double.js';
import { doubleExchanges, expectTitoInvariants } from '../__fixtures__/tito-invariants.js';
import { QWEN3_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import { createVllmClient } from '../engines/vllm.js';
import { runEpisode } from '../rollout/episode.js';
import type { ChatMessage } from '../tokens/chat-types.js';
import { loadModelTokenizer, type ModelTokenizer } from '../tokens/model-tokenizer.js';
import { hermesParser } from '../tokens/tool-calls/hermes.js';
import { externalEpisodeResult } from './external-episode.js';
import { GatewayEpisode } from './gateway-episode.js';
import { parseCompletionRequest } from './openai-request.js';

// A turn with one well-formed and one malformed call, answered by the built-in agent and by the gateway
// in front of the same scripted engine: the gateway returns the good call and shows the model the same
// error result for the bad one, so the model's next prompt is the same tokens on both paths.
const GOOD = '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>';
const BAD = '<tool_call>\n{"name": "add", "arguments": {"a": 2,, "b": 3}}\n</tool_call>';
const TURNS = [`${GOOD}\n${BAD}<|im_end|>`, 'The sum is 5.<|im_end|>'];
const add = tool({
  name: 'add',
  description: 'Add two numbers',
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  callback: ({ a, b }) => ({ sum: a + b }),
});
const sampling = { temperature: 1, topP: 1, topK: -1 };

let qwen: ModelTokenizer;
let double: EngineDouble | undefined;
beforeAll(async () => {
  qwen = await loadModelTokenizer(QWEN3_TOKENIZER_DIR);
});
afterEach(() => double?.close());

async function scriptedDouble(): Promise<EngineDouble> {
  const d = await startEngineDouble({
    script: () => ({ tokenIds: qwen.encode(TURNS[Math.min(d.requests.length - 1, TURNS.length - 1)]!) }),
  });
  return (double = d);
}

/** The tokens the environment appended between the first model turn and the second engine call. */
function continuation(d: EngineDouble): number[] {
  const [first, second] = [d.requests[0]!, d.requests[1]!];
  return second.promptIds.slice(first.promptIds.length + first.outputs[0]!.length);
}

describe('a turn with a malformed call beside a well-formed one', () => {
  test('returns the well-formed call, counts the malformed one and shows the model the error result the built-in agent shows', async () => {
    const builtin = await scriptedDouble();
    const result = await runEpisode({
      task: { id: 't', prompt: 'What is 2+3?', data: {} },
      spec: { tools: [add], maxTurns: 3, maxNewTokens: 256, sampling, toolCallFormat: 'hermes' },
      engine: createVllmClient({ baseUrl: builtin.url, model: 'policy' }),
      tokenizer: qwen,
      policyVersion: 0,
      timeoutMs: 30_000,
    });
    expect(result.stats.toolErrorsByKind).toStrictEqual({ bad_json: 1 });
    const builtinContinuation = continuation(builtin);
    builtin.close();

    const gatewayDouble = await scriptedDouble();
    const episode = new GatewayEpisode('g', {
      engine: createVllmClient({ baseUrl: gatewayDouble.url, model: 'policy' }),
      tokenizer: qwen,
      parser: hermesParser,
      policyVersion: 0,
      maxTurns: 3,
      maxNewTokens: 256,
      sampling,
    });
    const tools = [{ type: 'function', function: { name: 'add', parameters: { type: 'object' } } }];
    const messages: Record<string, unknown>[] = [{ role: 'user', content: 'What is 2+3?' }];
    const first = await episode.complete(parseCompletionRequest({ messages, tools }));
    expect([first.finishReason, first.toolCalls, first.text]).toStrictEqual([
      'tool_calls',
      [{ id: 'call_g_0_0', name: 'add', arguments: '{"a":2,"b":3}' }],
      '',
    ]);
    expect(episode.toolErrorsByKind).toStrictEqual({ bad_json: 1 });
    // The agent answers the one call it was given, as any OpenAI client does.
    messages.push(
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_g_0_0', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":3}' } }],
      },
      { role: 'tool', tool_call_id: 'call_g_0_0', content: '{"sum": 5}' },
    );
    const second = await episode.complete(parseCompletionRequest({ messages, tools }));
    expect([second.finishReason, second.text]).toStrictEqual(['stop', 'The sum is 5.']);
    expect(qwen.decode(continuation(gatewayDouble))).toContain('Error: the tool call is not valid JSON');
    expect(continuation(gatewayDouble)).toStrictEqual(builtinContinuation);
    // One segment, no rewrite: the agent's history still extends the recorded one.
    const gateway = externalEpisodeResult(episode, { timedOut: false, log: '' }, undefined, 0);
    expect([gateway.stats.historyRewrites, gateway.stats.toolErrors]).toStrictEqual([0, 1]);
    expectTitoInvariants(gateway, doubleExchanges(gatewayDouble));
    expect((gateway.messages as ChatMessage[]).filter((m) => m.role === 'tool').map((m) => m.content)).toStrictEqual([
      '{"sum": 5}',
      expect.stringMatching(/^Error: the tool call is not valid JSON/),
    ]);
  });
});
