import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tool } from '@strands-agents/sdk';
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import { z } from 'zod';
import { startEngineDouble, type EngineDouble } from '../__fixtures__/engine-double.js';
import { doubleExchanges, expectTitoInvariants } from '../__fixtures__/tito-invariants.js';
import { loadGptOss, TOOL_CALL_FAMILIES, type ToolCallFamily } from '../__fixtures__/tool-call-families.js';
import { toChatTools } from '../agent/chat-messages.js';
import { createVllmClient } from '../engines/vllm.js';
import { auditEpisodeDrift } from '../rollout/episode-drift.js';
import { runEpisode } from '../rollout/episode.js';
import type { ModelTokenizer } from '../tokens/model-tokenizer.js';
import { parseReply } from '../tokens/reply-markers.js';
import { resolveToolCallFormat } from '../tokens/tool-call-format.js';
import { toolCallParsers } from '../tokens/tool-calls/index.js';
import type { ToolCallToRender } from '../tokens/tool-calls/types.js';
import { externalEpisodeResult } from './external-episode.js';
import { GatewayEpisode } from './gateway-episode.js';
import { parseCompletionRequest } from './openai-request.js';

// Each family end to end with its real tokenizer and tool-calling template: the template renders the
// tools and the question, the scripted model answers in the family's format (its markers as the
// tokenizer's own ids), the call is parsed and run, its result rendered, and the history stays
// append-only (the drift audit re-renders the whole conversation and finds the trajectory's tokens).
// The gateway, in front of the same scripted model, sends the engine the same tokens at every turn.

const root = mkdtempSync(join(tmpdir(), 'atk-formats-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let double: EngineDouble | undefined;
afterEach(() => double?.close());

const add = tool({
  name: 'add',
  description: 'Add two numbers',
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  callback: ({ a, b }) => ({ sum: a + b }),
});
/** The tools as an agent sends them in its requests: the same JSON schemas the built-in agent renders. */
const OPENAI_TOOLS = toChatTools([add.toolSpec]);
const sampling = { temperature: 1, topP: 1, topK: -1 };
const QUESTION = 'What is 2+3, and then 1+1 and 4+5?';

/** The model's replies: one call, then (where the family may) two calls in one reply, then the answer. */
function replies(family: ToolCallFamily): { calls: ToolCallToRender[]; text: string }[] {
  const write = family.writeCalls ?? toolCallParsers[family.format]!.renderCalls;
  const turns = [[{ name: 'add', arguments: { a: 2, b: 3 } }]];
  if (family.parallel) {
    turns.push([
      { name: 'add', arguments: { a: 1, b: 1 } },
      { name: 'add', arguments: { a: 4, b: 5 } },
    ]);
  }
  const answer = 'The sums are 5, 2 and 9.';
  return [
    ...turns.map((calls, i) => ({
      calls,
      text: (i === 0 ? (family.droppedReasoning ?? '') : '') + write(calls) + family.end,
    })),
    { calls: [], text: (family.writeAnswer?.(answer) ?? answer) + (family.answerEnd ?? family.end) },
  ];
}

async function scripted(tok: ModelTokenizer, texts: readonly string[]): Promise<EngineDouble> {
  const d = await startEngineDouble({
    script: () => ({ tokenIds: tok.encode(texts[Math.min(d.requests.length - 1, texts.length - 1)]!) }),
  });
  return (double = d);
}

/** The family's tokenizer, its files written once under the test's directory. */
const load = (family: ToolCallFamily): Promise<ModelTokenizer> => family.load(join(root, family.format));

describe.each(TOOL_CALL_FAMILIES)('$family ($format)', (family) => {
  const registered = toolCallParsers[family.format] !== undefined;

  test.skipIf(!registered)('returns the format from auto for the real template', async () => {
    expect(resolveToolCallFormat('auto', await load(family))).toBe(family.format);
  });

  test.skipIf(!registered)(
    'returns each call parsed and run, its result rendered, and a history that stays append-only',
    async () => {
      const tok = await load(family);
      const script = replies(family);
      const d = await scripted(
        tok,
        script.map((r) => r.text),
      );
      const spec = {
        tools: [add],
        maxTurns: 4,
        maxNewTokens: 256,
        sampling,
        toolCallFormat: family.format,
        ...(family.kwargs ? { chatTemplateKwargs: family.kwargs } : {}),
      };
      const result = await runEpisode({
        task: { id: 't', prompt: QUESTION, data: {} },
        spec,
        engine: createVllmClient({ baseUrl: d.url, model: 'policy' }),
        tokenizer: tok,
        policyVersion: 0,
        timeoutMs: 30_000,
      });
      expect(result.error).toBeUndefined();
      expect([result.finishReason, result.finalText]).toStrictEqual(['endTurn', 'The sums are 5, 2 and 9.']);
      expect(result.toolCalls.map((c) => [c.name, c.input])).toStrictEqual(
        script.flatMap((r) => r.calls.map((c) => [c.name, c.arguments])),
      );
      expect(result.stats.toolErrors).toBe(0);
      // Each result reached the model: the prompt of the turn after a call holds it.
      const sums = script.flatMap((r) => r.calls.map((c) => Number(c.arguments.a) + Number(c.arguments.b)));
      const shown = (s: number): string => (family.writesResult ?? String)(`{"sum": ${s}}`);
      expect(sums.map((s) => tok.decode(d.requests.at(-1)!.promptIds).includes(shown(s)))).toStrictEqual(
        sums.map(() => true),
      );
      expectTitoInvariants(result, doubleExchanges(d));
      const drift = auditEpisodeDrift(result, tok, spec);
      const { promptOnly, droppedReasoning } = family;
      // gpt-oss's template leaves the analysis of an earlier turn out: the reasoning is all the drift.
      expect(drift.changedModelTokens).toBe(droppedReasoning === undefined ? 0 : tok.encode(droppedReasoning).length);
      expect(drift.hunks.map((h) => [h.trajectory.text, h.rerendered.text])).toStrictEqual(
        promptOnly !== undefined
          ? script.slice(0, -1).map(() => [promptOnly, ''])
          : droppedReasoning !== undefined
            ? [[droppedReasoning, '']]
            : [],
      );
    },
  );

  test.skipIf(!registered || family.callMarker === undefined)(
    'returns no call when the model spells the call marker out of ordinary tokens, and its text as the answer',
    async () => {
      const tok = await load(family);
      const marker = family.callMarker!;
      const written = toolCallParsers[family.format]!.renderCalls([{ name: 'add', arguments: { a: 2, b: 3 } }]);
      expect(written.startsWith(marker)).toBe(true);
      const spelled = [...tok.encode(marker[0]!), ...tok.encode(written.slice(1) + family.end)];
      expect(spelled).not.toContain(tok.addedTokens.get(marker));
      const d = await startEngineDouble({ script: () => ({ tokenIds: spelled }) });
      double = d;
      const result = await runEpisode({
        task: { id: 't', prompt: QUESTION, data: {} },
        spec: {
          tools: [add],
          maxTurns: 4,
          maxNewTokens: 256,
          sampling,
          toolCallFormat: family.format,
          ...(family.kwargs ? { chatTemplateKwargs: family.kwargs } : {}),
        },
        engine: createVllmClient({ baseUrl: d.url, model: 'policy' }),
        tokenizer: tok,
        policyVersion: 0,
        timeoutMs: 30_000,
      });
      expect([result.finishReason, result.toolCalls, result.stats.toolErrors]).toStrictEqual(['endTurn', [], 0]);
      expect(result.finalText).toBe(written.trim());
      expect(d.requests).toHaveLength(1);
    },
  );

  test.skipIf(!registered)(
    'returns the same engine prompts through the gateway as from the built-in agent',
    async () => {
      const tok = await load(family);
      const texts = replies(family).map((r) => r.text);
      const builtin = await scripted(tok, texts);
      await runEpisode({
        task: { id: 't', prompt: QUESTION, data: {} },
        spec: {
          tools: [add],
          maxTurns: 4,
          maxNewTokens: 256,
          sampling,
          toolCallFormat: family.format,
          ...(family.kwargs ? { chatTemplateKwargs: family.kwargs } : {}),
        },
        engine: createVllmClient({ baseUrl: builtin.url, model: 'policy' }),
        tokenizer: tok,
        policyVersion: 0,
        timeoutMs: 30_000,
      });
      const builtinPrompts = builtin.requests.map((r) => r.promptIds);
      await builtin.close();

      const gatewayDouble = await scripted(tok, texts);
      const episode = new GatewayEpisode('g', {
        engine: createVllmClient({ baseUrl: gatewayDouble.url, model: 'policy' }),
        tokenizer: tok,
        parser: toolCallParsers[family.format]!,
        policyVersion: 0,
        maxTurns: 4,
        maxNewTokens: 256,
        sampling,
        ...(family.kwargs ? { chatTemplateKwargs: family.kwargs } : {}),
      });
      const messages: Record<string, unknown>[] = [{ role: 'user', content: QUESTION }];
      for (;;) {
        const reply = await episode.complete(parseCompletionRequest({ messages, tools: OPENAI_TOOLS }));
        if (reply.toolCalls.length === 0) break;
        messages.push({
          role: 'assistant',
          content: reply.text === '' ? null : reply.text,
          tool_calls: reply.toolCalls.map((c) => ({
            id: c.id,
            type: 'function',
            function: { name: c.name, arguments: c.arguments },
          })),
        });
        for (const c of reply.toolCalls) {
          const { a, b } = JSON.parse(c.arguments) as { a: number; b: number };
          messages.push({ role: 'tool', tool_call_id: c.id, content: `{"sum": ${a + b}}` });
        }
      }
      expect(gatewayDouble.requests.map((r) => r.promptIds)).toStrictEqual(builtinPrompts);
      const gateway = externalEpisodeResult(episode, { timedOut: false, log: '' }, undefined, 0);
      expect(gateway.stats.historyRewrites).toBe(0);
    },
  );
});

describe.each(TOOL_CALL_FAMILIES.filter((f) => f.parallel))('$family ($format), a malformed call', (family) => {
  test.skipIf(toolCallParsers[family.format] === undefined)(
    'returns the same engine prompts through the gateway as from the built-in agent, the bad call answered with the same error',
    async () => {
      const tok = await load(family);
      const parser = toolCallParsers[family.format]!;
      // Two calls in one reply, written as the format joins parallel calls, the second broken.
      const reply = family.corrupt(
        parser.renderCalls([
          { name: 'add', arguments: { a: 2, b: 3 } },
          { name: 'add', arguments: { a: 2, b: 3 } },
        ]),
      );
      expect(parser.parse(reply, { tools: OPENAI_TOOLS }).calls.map((c) => c.ok)).toStrictEqual([true, false]);
      const texts = [reply + family.end, `The sum is 5.${family.end}`];
      const builtin = await scripted(tok, texts);
      const result = await runEpisode({
        task: { id: 't', prompt: QUESTION, data: {} },
        spec: {
          tools: [add],
          maxTurns: 4,
          maxNewTokens: 256,
          sampling,
          toolCallFormat: family.format,
          ...(family.kwargs ? { chatTemplateKwargs: family.kwargs } : {}),
        },
        engine: createVllmClient({ baseUrl: builtin.url, model: 'policy' }),
        tokenizer: tok,
        policyVersion: 0,
        timeoutMs: 30_000,
      });
      expect(result.stats.toolErrors).toBe(1);
      const builtinPrompts = builtin.requests.map((r) => r.promptIds);
      await builtin.close();

      const gatewayDouble = await scripted(tok, texts);
      const episode = new GatewayEpisode('g', {
        engine: createVllmClient({ baseUrl: gatewayDouble.url, model: 'policy' }),
        tokenizer: tok,
        parser,
        policyVersion: 0,
        maxTurns: 4,
        maxNewTokens: 256,
        sampling,
        ...(family.kwargs ? { chatTemplateKwargs: family.kwargs } : {}),
      });
      const messages: Record<string, unknown>[] = [{ role: 'user', content: QUESTION }];
      const first = await episode.complete(parseCompletionRequest({ messages, tools: OPENAI_TOOLS }));
      expect(first.toolCalls.map((c) => [c.name, c.arguments])).toStrictEqual([['add', '{"a":2,"b":3}']]);
      messages.push(
        {
          role: 'assistant',
          content: first.text === '' ? null : first.text,
          tool_calls: first.toolCalls.map((c) => ({
            id: c.id,
            type: 'function',
            function: { name: c.name, arguments: c.arguments },
          })),
        },
        { role: 'tool', tool_call_id: first.toolCalls[0]!.id, content: '{"sum": 5}' },
      );
      await episode.complete(parseCompletionRequest({ messages, tools: OPENAI_TOOLS }));
      expect(gatewayDouble.requests.map((r) => r.promptIds)).toStrictEqual(builtinPrompts);
      expect(episode.toolErrorsByKind).toStrictEqual(result.stats.toolErrorsByKind);
    },
  );
});

describe('gpt-oss (harmony)', () => {
  test('returns harmony from auto for the harmony template, and the call and reasoning of a reply in real gpt-oss tokens', async () => {
    const tok = await loadGptOss(join(root, 'harmony'));
    expect(resolveToolCallFormat('auto', tok)).toBe('harmony');
    const reply =
      '<|channel|>analysis<|message|>The user wants a sum.<|end|><|start|>assistant<|channel|>commentary to=functions.add <|constrain|>json<|message|>{"a": 2, "b": 3}<|call|>';
    const ids = tok.encode(reply);
    for (const marker of ['<|channel|>', '<|message|>', '<|end|>', '<|start|>', '<|constrain|>', '<|call|>'])
      expect(ids).toContain(tok.addedTokens.get(marker));
    // <|call|> is the stop token: the turn decodes the reply without it.
    expect(tok.eosTokenIds).toContain(ids.at(-1));
    const text = tok.decode(ids.slice(0, -1));
    expect(parseReply(tok, toolCallParsers.harmony!, ids.slice(0, -1), text)).toStrictEqual({
      reasoning: 'The user wants a sum.',
      text: '',
      calls: [
        {
          ok: true,
          name: 'add',
          arguments: { a: 2, b: 3 },
          raw: '<|start|>assistant<|channel|>commentary to=functions.add <|constrain|>json<|message|>{"a": 2, "b": 3}',
        },
      ],
    });
  });
});
