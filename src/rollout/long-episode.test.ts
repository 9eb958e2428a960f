import { tool } from '@strands-agents/sdk';
import { afterEach, beforeAll, describe, expect, test } from 'vitest';
import { z } from 'zod';
import { startEngineDouble, type EngineDouble, type ReplyScript } from '../__fixtures__/engine-double.js';
import { doubleExchanges, type EngineExchange } from '../__fixtures__/tito-invariants.js';
import { QWEN3_TOKENIZER_DIR, TINY_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import { DROPPED_TOOL_RESULT, SUMMARY_HEADER } from '../agent/long-episode.js';
import { toChatTools } from '../agent/chat-messages.js';
import { createVllmClient } from '../engines/vllm.js';
import { incrementalRenderer } from '../tokens/incremental-render.js';
import { loadModelTokenizer, type ModelTokenizer } from '../tokens/model-tokenizer.js';
import { detectReasoningHistory } from '../tokens/reasoning-history.js';
import type { TokenTrajectory } from '../tokens/trajectory.js';
import { trajectoryRecord } from '../run/step-record.js';
import { recordedDrift } from '../ui/trajectory/drift-audit.js';
import { parseTrajectoryLine } from '../ui/trajectory/record.js';
import { recordedSegments } from '../ui/trajectory/segments.js';
import type { Rollout } from './collect.js';
import { auditEpisodeDrift, auditRecordedDrift, episodeChatMessages } from './episode-drift.js';
import { runEpisode, type AgentSpec, type EpisodeResult } from './episode.js';

// Long episodes of the built-in agent: a thinking template's stripped reasoning and a context past its
// budget each continue the episode in a new trajectory segment, with exact tokens in every segment.
const add = tool({
  name: 'add',
  description: 'Add two numbers',
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  callback: ({ a, b }) => ({ sum: a + b }),
});
const page = tool({
  name: 'page',
  description: 'Read a page',
  inputSchema: z.object({ n: z.number() }),
  callback: ({ n }) => `page ${n}: ${'lorem ipsum '.repeat(12)}`,
});
const task = { id: 't1', prompt: 'What is 2+3?', data: {} };
const spec: AgentSpec = {
  systemPrompt: 'You add.',
  tools: [add],
  maxTurns: 8,
  maxNewTokens: 64,
  sampling: { temperature: 1, topP: 1, topK: -1, seed: 7 },
  toolCallFormat: 'hermes',
};
const call = (a: number, b: number): string =>
  `<tool_call>\n{"name": "add", "arguments": {"a": ${a}, "b": ${b}}}\n</tool_call>`;

let tiny: ModelTokenizer;
let qwen: ModelTokenizer;
let double: EngineDouble | undefined;
beforeAll(async () => {
  tiny = await loadModelTokenizer(TINY_TOKENIZER_DIR);
  qwen = await loadModelTokenizer(QWEN3_TOKENIZER_DIR);
});
afterEach(() => double?.close());

async function scripted(tok: ModelTokenizer, turns: readonly string[]): Promise<EngineDouble> {
  const script: ReplyScript = () => ({
    tokenIds: tok.encode(turns[Math.min(double!.requests.length - 1, turns.length - 1)]!),
  });
  double = await startEngineDouble({ script });
  return double;
}

function segmentsOf(result: EpisodeResult): TokenTrajectory[] {
  return [...(result.priorSegments ?? []).map((s) => s.trajectory), result.trajectory];
}

/**
 * Per segment, the token-in/token-out invariants: its model tokens are the engine's answers verbatim
 * and in order, each prompt within it extends the one before with its answer, and it ends with its
 * last prompt and answer; the episode's generated tokens are every segment's.
 */
function expectSegmentInvariants(result: EpisodeResult, exchanges: readonly EngineExchange[]): void {
  let k = 0;
  for (const segment of segmentsOf(result)) {
    const turns = segment.segments.filter((s) => s.source === 'model');
    const own = exchanges.slice(k, k + turns.length);
    k += turns.length;
    expect(turns.map((s) => segment.ids.slice(s.start, s.start + s.length))).toStrictEqual(
      own.map((x) => [...x.tokenIds]),
    );
    for (let i = 1; i < own.length; i++) {
      const before = [...own[i - 1]!.promptIds, ...own[i - 1]!.tokenIds];
      expect(own[i]!.promptIds.slice(0, before.length)).toStrictEqual(before);
    }
    const last = own.at(-1)!;
    expect(segment.ids).toStrictEqual([...last.promptIds, ...last.tokenIds]);
  }
  expect(k).toBe(exchanges.length);
  expect(result.stats.generatedTokens).toBe(exchanges.reduce((a, x) => a + x.tokenIds.length, 0));
}

describe('detectReasoningHistory', () => {
  test("returns strip for Qwen3's template and keep for one that renders no reasoning", () => {
    expect(detectReasoningHistory(qwen)).toBe('strip');
    expect(detectReasoningHistory(tiny)).toBe('keep');
  });
});

describe('runEpisode with reasoning_history', () => {
  const thinking = [
    `<think>\nneed add\n</think>\n\n${call(2, 3)}<|im_end|>`,
    '<think>\nsum is 5\n</think>\n\n5<|im_end|>',
    '<think>\neasy\n</think>\n\n7<|im_end|>',
  ];
  const user = async (c: readonly unknown[]): Promise<string | null> => (c.length < 6 ? 'And 3+4?' : null);
  const qSpec = { ...spec, chatTemplateKwargs: { enable_thinking: true } };

  test("strip: returns segments whose every prompt is the template's own rendering and whose generated tokens are the engine's", async () => {
    const d = await scripted(qwen, thinking);
    const stripSpec = { ...qSpec, reasoningHistory: 'strip' as const };
    const result = await runEpisode({
      task,
      spec: stripSpec,
      engine: createVllmClient({ baseUrl: d.url, model: 'policy' }),
      tokenizer: qwen,
      policyVersion: 3,
      timeoutMs: 10_000,
      user,
    });
    expect(result.error).toBeUndefined();
    const exchanges = doubleExchanges(d);
    expectSegmentInvariants(result, exchanges);
    // The new user turn makes Qwen3 drop the first two turns' reasoning: the third prompt starts a segment.
    expect(result.priorSegments?.map((s) => s.endedBecause)).toStrictEqual(['reasoning_history']);
    expect(segmentsOf(result).map((s) => s.counters.turns)).toStrictEqual([2, 3]);
    const chat = episodeChatMessages(result.messages);
    const tools = toChatTools(stripSpec.tools.map((t) => t.toolSpec));
    const before = [2, 4, 6]; // messages before each model turn: system+task, +call+result, +answer+user
    for (const [i, x] of exchanges.entries()) {
      const text = qwen.renderChat(chat.slice(0, before[i]), {
        enable_thinking: true,
        tools,
        addGenerationPrompt: true,
      });
      expect(x.promptIds).toStrictEqual(qwen.encode(text));
    }
    expect(qwen.decode(exchanges[2]!.promptIds)).not.toContain('need add');
    // The reasoning the model wrote is still trained: every answer's tokens are under mask 1 in its segment.
    const trained = segmentsOf(result).flatMap((s) => s.ids.filter((_, i) => s.mask()[i] === 1));
    expect(trained).toStrictEqual(exchanges.flatMap((x) => [...x.tokenIds]));
    expect(auditEpisodeDrift(result, qwen, stripSpec).identical).toBe(true);
  });

  test('keep: returns one append-only segment that keeps the earlier reasoning', async () => {
    const d = await scripted(qwen, thinking);
    const result = await runEpisode({
      task,
      spec: { ...qSpec, reasoningHistory: 'keep' },
      engine: createVllmClient({ baseUrl: d.url, model: 'policy' }),
      tokenizer: qwen,
      policyVersion: 3,
      timeoutMs: 10_000,
      user,
    });
    expect(result.priorSegments).toBeUndefined();
    expectSegmentInvariants(result, doubleExchanges(d));
    expect(qwen.decode(doubleExchanges(d)[2]!.promptIds)).toContain('need add');
    expect(auditEpisodeDrift(result, qwen, qSpec).identical).toBe(false);
  });
});

describe('runEpisode with agent.context', () => {
  // Six tool calls then an answer. The tiny tokenizer is nearly byte-level: the system prompt, tools and task
  // take 542 tokens and each call with its result 72, so a 780-token budget is passed at the fourth turn.
  const toolTurns = [...[1, 2, 3, 4, 5, 6].map((n) => `${call(n, n)}<|im_end|>`), 'done<|im_end|>'];

  test('sliding_window: returns segments that keep the system prompt, the task and the last turns, each with its reason', async () => {
    const d = await scripted(tiny, toolTurns);
    const context = {
      strategy: 'sliding_window' as const,
      budgetTokens: 780,
      keepLastTurns: 2,
      drop: 'turns' as const,
    };
    const result = await runEpisode({
      task,
      spec: { ...spec, context },
      engine: createVllmClient({ baseUrl: d.url, model: 'policy' }),
      tokenizer: tiny,
      policyVersion: 3,
      timeoutMs: 10_000,
    });
    expect(result.error).toBeUndefined();
    expect(result.finishReason).toBe('endTurn');
    const exchanges = doubleExchanges(d);
    expectSegmentInvariants(result, exchanges);
    const reasons = result.priorSegments!.map((s) => s.endedBecause);
    expect(reasons.length).toBeGreaterThan(0);
    expect(new Set(reasons)).toStrictEqual(new Set(['sliding_window']));
    expect(result.stats.turns).toBe(7);
    expect(result.stats.contextDroppedTokens).toBeGreaterThan(0);
    const renderer = incrementalRenderer(tiny);
    const tools = toChatTools(spec.tools.map((t) => t.toolSpec));
    for (const segment of segmentsOf(result).slice(1)) {
      const text = tiny.decode(segment.ids.slice(0, segment.promptLength));
      // The head stays and the prompt is a whole render of the system prompt, the task and at most two turns.
      expect(
        text.startsWith(
          tiny
            .decode(
              renderer.initial(
                [
                  { role: 'system', content: 'You add.' },
                  { role: 'user', content: task.prompt },
                ],
                tools,
              ),
            )
            .replace(/<\|im_start\|>assistant\n$/, ''),
        ),
      ).toBe(true);
      expect(text.split('"name": "add", "arguments"').length - 1).toBeLessThanOrEqual(2);
      expect(segment.promptLength).toBeLessThanOrEqual(780);
    }
  });

  test("sliding_window: the written trajectory line's drift audit finds no drift in any segment, though the window dropped turns", async () => {
    const d = await scripted(tiny, toolTurns);
    const context = {
      strategy: 'sliding_window' as const,
      budgetTokens: 780,
      keepLastTurns: 2,
      drop: 'turns' as const,
    };
    const episode = await runEpisode({
      task,
      spec: { ...spec, context },
      engine: createVllmClient({ baseUrl: d.url, model: 'policy' }),
      tokenizer: tiny,
      policyVersion: 3,
      timeoutMs: 10_000,
    });
    expect(episode.error).toBeUndefined();
    const rollout: Rollout = {
      task,
      group: 0,
      sample: 0,
      policyVersion: 3,
      reward: 1,
      parts: {},
      success: true,
      failed: false,
      episode,
    };
    // Through the trajectory writer and reader, as atk inspect-trajectory --drift and atk view audit it.
    const record = parseTrajectoryLine(JSON.stringify(trajectoryRecord(rollout, 1, 0)), 'step-00001.jsonl:1');
    const segments = recordedSegments(record);
    expect(segments.length).toBeGreaterThan(2);
    expect(segments.map((s) => s.endedBecause)).toStrictEqual([
      ...segments.slice(1).map(() => 'sliding_window'),
      undefined,
    ]);
    const tools = toChatTools(spec.tools.map((t) => t.toolSpec));
    const audit = await recordedDrift(record, segments, tiny, undefined, tools);
    expect(audit.segments).toHaveLength(segments.length);
    expect(audit.segments.map((r) => r?.identical)).toStrictEqual(segments.map(() => true));
    expect(audit.report).toStrictEqual(audit.segments.at(-1));
    // The window really dropped turns: the whole conversation rendered against the last segment differs.
    const last = segments.at(-1)!.trajectory;
    expect(auditRecordedDrift({ messages: record.messages, trajectory: last }, tiny, tools, {}).identical).toBe(false);
  });

  test('sliding_window with drop tool_results: blanks the oldest tool results before dropping turns', async () => {
    const pages = [1, 2, 3, 4, 5].map(
      (n) => `<tool_call>\n{"name": "page", "arguments": {"n": ${n}}}\n</tool_call><|im_end|>`,
    );
    const d = await scripted(tiny, [...pages, 'done<|im_end|>']);
    const context = {
      strategy: 'sliding_window' as const,
      budgetTokens: 1100,
      keepLastTurns: 8,
      drop: 'tool_results' as const,
    };
    const result = await runEpisode({
      task,
      spec: { ...spec, tools: [add, page], context },
      engine: createVllmClient({ baseUrl: d.url, model: 'policy' }),
      tokenizer: tiny,
      policyVersion: 3,
      timeoutMs: 10_000,
    });
    expectSegmentInvariants(result, doubleExchanges(d));
    expect(result.priorSegments?.map((s) => s.endedBecause)[0]).toBe('sliding_window');
    const second = segmentsOf(result)[1]!;
    const prompt = tiny.decode(second.ids.slice(0, second.promptLength));
    // Every turn is still there; the first page's text is not.
    expect(prompt).toContain(DROPPED_TOOL_RESULT);
    expect(prompt).not.toContain('page 1:');
    expect(prompt).toContain('{"name": "page", "arguments": {"n": 1}}');
  });

  test("summarize: the policy's summary is a trained segment of its own and the next segment carries it", async () => {
    const turns = [...toolTurns.slice(0, 4), 'Added 1+1, 2+2, 3+3 and 4+4.<|im_end|>', ...toolTurns.slice(4)];
    const d = await scripted(tiny, turns);
    const context = {
      strategy: 'summarize' as const,
      budgetTokens: 780,
      keepLastTurns: 1,
      drop: 'turns' as const,
      summaryPrompt: 'Summarise the conversation so far.',
      maxSummaryTokens: 32,
    };
    const result = await runEpisode({
      task,
      spec: { ...spec, context },
      engine: createVllmClient({ baseUrl: d.url, model: 'policy' }),
      tokenizer: tiny,
      policyVersion: 3,
      timeoutMs: 10_000,
    });
    expect(result.error).toBeUndefined();
    const exchanges = doubleExchanges(d);
    expectSegmentInvariants(result, exchanges);
    const reasons = result.priorSegments!.map((s) => s.endedBecause);
    expect(reasons.slice(0, 2)).toStrictEqual(['summarize', 'summarized']);
    const [, summary, after] = segmentsOf(result);
    expect(tiny.decode(summary!.ids)).toContain('Summarise the conversation so far.');
    expect(summary!.mask().filter((m) => m === 1)).toHaveLength(
      tiny.encode('Added 1+1, 2+2, 3+3 and 4+4.<|im_end|>').length,
    );
    expect(tiny.decode(after!.ids.slice(0, after!.promptLength))).toContain(
      `${SUMMARY_HEADER}\nAdded 1+1, 2+2, 3+3 and 4+4.`,
    );
    // The summary is no message of the conversation: the transcript holds the seven tool/answer turns only.
    expect(result.messages.filter((m) => (m as { role: string }).role === 'assistant')).toHaveLength(7);
  });
});
