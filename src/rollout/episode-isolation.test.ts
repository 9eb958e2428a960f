import { tool } from '@strands-agents/sdk';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { z } from 'zod';
import { startEngineDouble, type EngineDouble } from '../__fixtures__/engine-double.js';
import { TINY_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import type { AssembledBatch } from '../algorithms/batch.js';
import { createVllmClient } from '../engines/vllm.js';
import type { Engine } from '../engines/types.js';
import { CancelledError } from '../errors/index.js';
import { loadModelTokenizer, type ModelTokenizer } from '../tokens/model-tokenizer.js';
import { builtInEpisodes, collectRollout, rolloutOnThrow, type EpisodeKit, type Rollout } from './collect.js';
import { runEpisode, type AgentSpec, type EpisodeResult, type RunEpisodeOptions } from './episode.js';
import { runGroups } from './scheduler.js';
import { overlapFigures, stepMetrics, trajectoryRecord } from '../run/step-record.js';
import { filterStale } from './staleness.js';

// Anything thrown while an episode runs ends that episode as failed, with the layer and message in
// its record; the episodes beside it and the step go on. One test per layer that can throw.
const add = tool({
  name: 'add',
  description: 'Add',
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  callback: ({ a, b }) => a + b,
});
const spec: AgentSpec = {
  tools: [add],
  maxTurns: 3,
  maxNewTokens: 64,
  sampling: { temperature: 1, topP: 1, topK: -1 },
  toolCallFormat: 'hermes',
};
const task = { id: 't', prompt: 'What is 2+3?', data: {} };

let tiny: ModelTokenizer;
let double: EngineDouble;
let engine: Engine;
beforeAll(async () => {
  tiny = await loadModelTokenizer(TINY_TOKENIZER_DIR);
  double = await startEngineDouble({ script: () => ({ tokenIds: tiny.encode('It is 5.<|im_end|>') }) });
  engine = createVllmClient({ baseUrl: double.url, model: 'policy' });
});
afterAll(() => double.close());

function episode(overrides: Partial<RunEpisodeOptions> = {}): Promise<EpisodeResult> {
  return runEpisode({ task, spec, engine, tokenizer: tiny, policyVersion: 0, timeoutMs: 10_000, ...overrides });
}

function kit(overrides: Partial<EpisodeKit> = {}): EpisodeKit {
  return {
    engine,
    tokenizer: tiny,
    tools: [() => [add]],
    reward: async () => ({ score: 1, parts: {} }),
    agent: { maxTurns: 3, maxNewTokens: 64, toolCallFormat: 'hermes' },
    systemPrompt: () => undefined,
    successThreshold: 1,
    timeoutMs: 10_000,
    runner: builtInEpisodes,
    ...overrides,
  };
}

const request = { task, group: 0, sample: 0, seed: 1, temperature: 1, topP: 1, topK: -1, policyVersion: 2 };
const outcome = (r: EpisodeResult | Rollout): [string | undefined, string | undefined] => [r.errorKind, r.error];

describe('episode isolation', () => {
  test('returns an engine client that throws a non-provider error as a failed episode of kind engine', async () => {
    const broken = Object.create(engine) as Engine & { generate: Engine['generate'] };
    broken.generate = () => Promise.reject(new TypeError("Cannot read properties of undefined (reading 'token_ids')"));
    const result = await episode({ engine: broken });
    expect([result.finishReason, ...outcome(result)]).toStrictEqual([
      'error',
      'engine',
      "TypeError: Cannot read properties of undefined (reading 'token_ids')",
    ]);
  });

  test('returns a chat template that throws as a failed episode of kind template', async () => {
    const tok = Object.create(tiny) as ModelTokenizer;
    tok.renderChat = (messages, options) => {
      if (messages.some((m) => m.content === task.prompt)) throw new Error('jinja: unknown filter "tojson_pretty"');
      return tiny.renderChat(messages, options);
    };
    expect(outcome(await episode({ tokenizer: tok }))).toStrictEqual([
      'template',
      'jinja: unknown filter "tojson_pretty"',
    ]);
  });

  test('returns a decoder or parser that throws as a failed episode of kind parser, keeping the tokens generated', async () => {
    const tok = Object.create(tiny) as ModelTokenizer;
    tok.decode = (ids, options) => {
      if (ids.length > 3) throw new RangeError('invalid token id 151936');
      return tiny.decode(ids, options);
    };
    const result = await episode({ tokenizer: tok });
    expect(outcome(result)).toStrictEqual(['parser', 'RangeError: invalid token id 151936']);
    expect(result.trajectory.mask().filter((m) => m === 1)).toHaveLength(tiny.encode('It is 5.<|im_end|>').length);
  });

  test('returns an agent the SDK refuses to build (two tools of one name) as a failed episode of kind sdk', async () => {
    const result = await episode({ spec: { ...spec, tools: [add, add] } });
    expect([result.finishReason, result.errorKind, result.trajectory.length]).toStrictEqual(['error', 'sdk', 0]);
    expect(result.error).toMatch(/add/);
  });

  test('returns a simulated user that throws as a failed episode of kind user', async () => {
    const user = (): Promise<string | null> => Promise.reject(new Error('simulator model unreachable'));
    expect(outcome(await episode({ user }))).toStrictEqual(['user', 'simulator model unreachable']);
  });

  test('returns tool set-up that throws as a failed rollout of kind tool', async () => {
    const rollout = await collectRollout(
      kit({
        tools: [
          () => {
            throw new Error('MCP server exited');
          },
        ],
      }),
      request,
    );
    expect([rollout.failed, rollout.reward, ...outcome(rollout)]).toStrictEqual([
      true,
      0,
      'tool',
      'tool set-up failed: MCP server exited',
    ]);
  });

  test('returns a reward that throws as a failed rollout of kind reward, its episode kept', async () => {
    const rollout = await collectRollout(kit({ reward: () => Promise.reject(new Error('judge said no')) }), request);
    expect([rollout.failed, ...outcome(rollout), rollout.episode.finalText]).toStrictEqual([
      true,
      'reward',
      'reward failed: judge said no',
      'It is 5.',
    ]);
    expect(trajectoryRecord(rollout, 1, null)).toMatchObject({
      failed: true,
      error: 'reward failed: judge said no',
      error_kind: 'reward',
    });
  });

  test('returns a reward that never answers as a failed rollout of kind reward once rollout.reward_timeout_s passes', async () => {
    const rollout = await collectRollout(
      kit({ reward: () => new Promise(() => undefined), rewardTimeoutMs: 100 }),
      request,
    );
    expect([rollout.failed, ...outcome(rollout)]).toStrictEqual([
      true,
      'reward',
      'reward failed: timed out after 0.1 s',
    ]);
  });

  test('returns the step with every other episode when one slot throws past collectRollout, counted per kind in the step metrics', async () => {
    const good = kit();
    const groups = await runGroups(
      [task, task],
      2,
      2,
      async ({ group, sample }) => {
        if (group === 1 && sample === 0) throw new Error('bug in the harness');
        return collectRollout(
          group === 0 && sample === 1 ? kit({ reward: () => Promise.reject(new Error('x')) }) : good,
          { ...request, group, sample },
        );
      },
      undefined,
      rolloutOnThrow(2),
    );
    expect(groups.map((g) => g.map((r) => [r.failed, r.errorKind]))).toStrictEqual([
      [
        [false, undefined],
        [true, 'reward'],
      ],
      [
        [true, 'scheduler'],
        [false, undefined],
      ],
    ]);
    const batch: AssembledBatch = { groups: 2, droppedGroups: 0, sequences: [] } as unknown as AssembledBatch;
    const metrics = stepMetrics({
      step: 1,
      policyVersion: 2,
      groups,
      batch,
      trainerMetrics: {},
      seconds: { generation: 1, train: 1, sync: 0, step: 2 },
      overlap: overlapFigures(filterStale(groups, 2, 0), 1, 1, 2),
    });
    expect([
      metrics.failed_episodes,
      metrics['failed/reward'],
      metrics['failed/scheduler'],
      metrics['failed/engine'],
    ]).toStrictEqual([2, 1, 1, undefined]);
  });

  test('rejects with CancelledError once the running slots settle, starting no other', async () => {
    const started: number[] = [];
    const run = runGroups(
      [1, 2, 3, 4],
      1,
      2,
      async ({ group }) => {
        started.push(group);
        if (group === 0) throw new CancelledError('cancelled');
        await new Promise((r) => setTimeout(r, 50));
        return group;
      },
      undefined,
      rolloutOnThrow(0) as never,
    );
    await expect(run).rejects.toBeInstanceOf(CancelledError);
    expect(started).toStrictEqual([0, 1]);
  });
});
