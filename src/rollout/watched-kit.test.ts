import { tool, type ToolContext } from '@strands-agents/sdk';
import { describe, expect, test } from 'vitest';
import { z } from 'zod';
import type { Engine } from '../engines/types.js';
import { builtInEpisodes, type EpisodeKit } from './collect.js';
import { StallWatch } from './stall-watch.js';
import { watchedKit } from './watched-kit.js';

const never = <T>(): Promise<T> => new Promise<T>(() => undefined);
const task = { id: 'q7', prompt: 'p', data: {} };
const env = { episodeId: '0-0', task, state: new Map<string, unknown>(), signal: new AbortController().signal };

describe('watchedKit', () => {
  test('returns a kit whose engine requests, tool calls, user turns and rewards are open waits of the watch while they run', async () => {
    let now = 0;
    const watch = new StallWatch({ minMs: 1_000, now: () => now });
    const hang = tool({
      name: 'search',
      description: 'Hangs',
      inputSchema: z.object({}),
      callback: () => never<string>(),
    });
    const engine = {
      model: 'policy',
      generate: () => Promise.resolve({ tokenIds: [1], logprobs: [0], finishReason: 'stop' }),
      generateN: () => never(),
    } as unknown as Engine;
    const kit = watchedKit(
      {
        engine,
        tokenizer: undefined as never,
        tools: [() => [hang]],
        reward: () => never(),
        user: () => ({ maxSteps: 5, maxToolErrors: 5, respond: () => never(), finish: () => undefined }),
        agent: { maxTurns: 1, maxNewTokens: 1, toolCallFormat: 'hermes' },
        systemPrompt: () => undefined,
        successThreshold: 1,
        timeoutMs: 1_000,
        runner: builtInEpisodes,
      } satisfies EpisodeKit,
      watch,
    );
    watch.stepStarted(1);
    now += 10_000;
    watch.stepFinished();
    watch.stepStarted(2);

    await kit.engine.generate([1, 2, 3], { temperature: 1, topP: 1, topK: -1, maxTokens: 4 });
    expect(kit.engine.model).toBe('policy');
    void kit.engine.generateN([1, 2], { temperature: 1, topP: 1, topK: -1, maxTokens: 4, n: 2 });
    now += 1_000;
    const [watchedTool] = kit.tools[0]!(env);
    void watchedTool!
      .stream({
        toolUse: { name: 'search', toolUseId: 't1', input: {} },
        agent: undefined as never,
      } as unknown as ToolContext)
      .next();
    now += 1_000;
    void kit.user!(task, env)!.respond([]);
    void kit.reward({ task, finalText: '', messages: [], toolCalls: [], finishReason: 'endTurn', env });
    now += 40_000;
    const report = watch.check();
    expect(report?.waits.map((w) => [w.component, w.detail, w.forMs, w.lastHeard?.what])).toStrictEqual([
      ['engine', 'generate 2 from 2 prompt tokens', 42_000, 'generate from 3 prompt tokens: answered'],
      ['tool', 'call of search', 41_000, undefined],
      ['user', 'user turn of task q7', 40_000, undefined],
      ['reward', 'reward of task q7', 40_000, undefined],
    ]);
  });
});
