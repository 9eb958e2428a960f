// The gateway's own CPU per request (parse the request, match it against the recorded history, render
// only what is new, record, parse tool calls, answer), excluding engine time, at 1 and 32 turns of
// history; requests/s with concurrent external episodes; and the ratio to the built-in agent's CPU per
// turn. Clients: the standard-library Python agent (a separate process, so this process's CPU is the
// gateway's) and the official `openai` client in-process. Engine: an in-process double answering instantly.
import { join } from 'node:path';
import OpenAI from 'openai';
import { createVllmClient } from '../src/engines/vllm.js';
import type { Engine } from '../src/engines/types.js';
import { startExternalAgents } from '../src/gateway/external-episode.js';
import { hermesParser } from '../src/tokens/tool-calls/hermes.js';
import { runEpisode } from '../src/rollout/episode.js';
import { agentSpec, instantDouble, median, qwen3, timedEngine } from './lib/tito-common.js';

const HISTORY = [1, 32];
// Medians of 5 swung 2x between identical runs on a loaded 2-core host, and one GC pause in 4 episodes
// lands in a measured gap; 24 episodes of each kind cost a few seconds more.
const EPISODES = 24;
const tok = await qwen3();
const double = await instantDouble(tok, 40);
const vllm = createVllmClient({ baseUrl: double.url, model: 'policy' });
const PYTHON = process.env.ATK_PYTHON ?? '/usr/bin/python3';
const task = { id: 'b', prompt: 'What is 2+3? Use the tool many times.', data: {} };
const sampling = { temperature: 1, topP: 1, topK: -1 };
const kwargs = { enable_thinking: false };

async function pythonAgents(
  engine: Engine,
  maxTurns: number,
): Promise<Awaited<ReturnType<typeof startExternalAgents>>> {
  return startExternalAgents({
    config: { command: [PYTHON, join('bench', 'lib', 'gateway-agent.py'), String(maxTurns)], env: {} },
    recipeDir: process.cwd(),
    engine,
    tokenizer: tok,
    maxTurns,
    maxNewTokens: 256,
    chatTemplateKwargs: kwargs,
    toolCallFormat: 'hermes',
  });
}

/**
 * Median CPU per model call at each history length, of the gateway (one Python agent at a time on one
 * gateway, as in a run; gaps inside this process only) and of the built-in agent. Their episodes
 * alternate, so both see the same JIT and heap: run one after the other, the second ran on a heap the
 * first had grown, and its GC pauses differed.
 */
async function perTurnCosts(): Promise<{ gateway: number[]; builtin: number[] }> {
  const gateway = new Map<number, number[]>(HISTORY.map((h) => [h, []]));
  const builtin = new Map<number, number[]>(HISTORY.map((h) => [h, []]));
  // One timed wrapper per episode (it keeps the end of its last call), swapped in behind one gateway.
  let engine: Engine = vllm;
  const agents = await pythonAgents(
    { ...vllm, generate: (prompt, params, signal) => engine.generate(prompt, params, signal) },
    34,
  );
  for (let e = 0; e < EPISODES + 2; e++) {
    const gaps: number[] = [];
    engine = timedEngine(vllm, gaps);
    const result = await agents.run({
      task,
      env: { episodeId: `b${e}`, task, state: new Map(), signal: new AbortController().signal },
      policyVersion: 0,
      sampling,
      timeoutMs: 120_000,
    });
    if (result.error) throw new Error(result.error);
    if (result.stats.historyRewrites !== 0) throw new Error('the bench agent rewrote its history');
    const builtinGaps: number[] = [];
    const own = await runEpisode({
      task,
      spec: agentSpec(34),
      engine: timedEngine(vllm, builtinGaps),
      tokenizer: tok,
      policyVersion: 0,
      timeoutMs: 60_000,
    });
    if (own.error) throw new Error(own.error);
    // The gap before call k+1 holds the gateway's answer to call k and its handling of request k+1
    // (the Python agent's own CPU is in its process); the first two episodes warm the JIT.
    if (e >= 2)
      for (const h of HISTORY) {
        gateway.get(h)!.push(gaps[h - 1]!);
        builtin.get(h)!.push(builtinGaps[h - 1]!);
      }
  }
  await agents.close();
  const medians = (m: Map<number, number[]>): number[] => HISTORY.map((h) => median(m.get(h)!));
  return { gateway: medians(gateway), builtin: medians(builtin) };
}

/** Requests/s of `episodes` concurrent Python agents, 8 model calls each. */
async function pythonThroughput(episodes: number): Promise<number> {
  const agents = await pythonAgents(vllm, 8);
  const started = performance.now();
  const results = await Promise.all(
    Array.from({ length: episodes }, (_, i) =>
      agents.run({
        task,
        env: { episodeId: `t${i}`, task, state: new Map(), signal: new AbortController().signal },
        policyVersion: 0,
        sampling,
        timeoutMs: 120_000,
      }),
    ),
  );
  const seconds = (performance.now() - started) / 1000;
  await agents.close();
  return results.reduce((a, r) => a + r.stats.turns, 0) / seconds;
}

/** Requests/s of `episodes` concurrent in-process openai clients, 8 model calls each. */
async function openaiThroughput(episodes: number): Promise<number> {
  const agents = await pythonAgents(vllm, 8);
  const tools = [
    {
      type: 'function' as const,
      function: {
        name: 'add',
        description: 'Add two numbers',
        parameters: {
          type: 'object',
          properties: { a: { type: 'number' }, b: { type: 'number' } },
          required: ['a', 'b'],
        },
      },
    },
  ];
  let requests = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: episodes }, async (_, i) => {
      const endpoint = agents.gateway.open(`o${i}`, {
        engine: vllm,
        tokenizer: tok,
        parser: hermesParser,
        policyVersion: 0,
        maxTurns: 8,
        maxNewTokens: 256,
        sampling,
        chatTemplateKwargs: kwargs,
      });
      const client = new OpenAI({ baseURL: endpoint.baseUrl, apiKey: endpoint.apiKey, maxRetries: 0 });
      const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
        { role: 'system', content: 'You are a careful calculator.' },
        { role: 'user', content: task.prompt },
      ];
      for (let turn = 0; turn < 8; turn++) {
        const message = (await client.chat.completions.create({ model: 'policy', messages, tools })).choices[0]!
          .message;
        requests++;
        const calls = (message.tool_calls ?? []).filter((c) => c.type === 'function');
        messages.push({ role: 'assistant', content: message.content, ...(calls.length ? { tool_calls: calls } : {}) });
        if (calls.length === 0) break;
        for (const call of calls) messages.push({ role: 'tool', tool_call_id: call.id, content: '{"sum": 5}' });
      }
      endpoint.close();
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await agents.close();
  return requests / seconds;
}

const { gateway, builtin } = await perTurnCosts();
const pythonRps = await pythonThroughput(16);
const openaiRps = await openaiThroughput(32);
await double.close();
console.log(
  `gateway CPU per request (median of ${EPISODES} Python-agent episodes, each followed by a built-in one; Qwen3 tokenizer, engine time excluded):`,
);
for (const [i, h] of HISTORY.entries())
  console.log(
    `  history ${String(h).padStart(2)} turns: gateway ${gateway[i]!.toFixed(2)} ms, built-in agent ${builtin[i]!.toFixed(2)} ms per turn, ratio ${(gateway[i]! / builtin[i]!).toFixed(2)}`,
  );
console.log(
  `  ratio turn-32 / turn-1: gateway ${(gateway[1]! / gateway[0]!).toFixed(2)}, built-in ${(builtin[1]! / builtin[0]!).toFixed(2)}`,
);
console.log(
  `requests/s on this machine (instant engine): 16 concurrent Python agents ${pythonRps.toFixed(0)}, 32 concurrent in-process openai clients ${openaiRps.toFixed(0)}`,
);
