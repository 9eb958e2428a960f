import { tool } from '@strands-agents/sdk';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { z } from 'zod';
import { startEngineDouble, type EngineDouble } from '../__fixtures__/engine-double.js';
import { TINY_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import { assembleBatch } from '../algorithms/batch.js';
import { createVllmClient } from '../engines/vllm.js';
import { resolveAlgorithm } from '../recipe/presets.js';
import { AlgorithmSchema } from '../recipe/schema.js';
import type { Rollout } from '../rollout/collect.js';
import { runEpisode, type EpisodeResult } from '../rollout/episode.js';
import { loadModelTokenizer } from '../tokens/model-tokenizer.js';
import type { TrajectoryJSON } from '../tokens/trajectory.js';
import { packRollout, unpackRollout } from './rollout-transfer.js';
import { asGroupMember } from './step-phases.js';
import { type PriorSegmentRecord, restorePriorSegments, segmentFigures, trajectoryRecord } from './step-record.js';

// A built-in episode split by its sliding window, from the episode to the batch and the trajectory file:
// every segment trained with the episode's advantage, stored once, carried across a worker thread.
const add = tool({
  name: 'add',
  description: 'Add two numbers',
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  callback: ({ a, b }) => ({ sum: a + b }),
});
const call = (n: number): string =>
  `<tool_call>\n{"name": "add", "arguments": {"a": ${n}, "b": ${n}}}\n</tool_call><|im_end|>`;
let double: EngineDouble;
let windowed: EpisodeResult;

beforeAll(async () => {
  const tiny = await loadModelTokenizer(TINY_TOKENIZER_DIR);
  const turns = [1, 2, 3, 4, 5, 6].map(call).concat('done<|im_end|>');
  double = await startEngineDouble({
    script: () => ({ tokenIds: tiny.encode(turns[Math.min(double.requests.length - 1, turns.length - 1)]!) }),
  });
  windowed = await runEpisode({
    task: { id: 't', prompt: 'What is 2+3?', data: {} },
    spec: {
      systemPrompt: 'You add.',
      tools: [add],
      maxTurns: 8,
      maxNewTokens: 64,
      sampling: { temperature: 1, topP: 1, topK: -1 },
      toolCallFormat: 'hermes',
      context: { strategy: 'sliding_window', budgetTokens: 780, keepLastTurns: 2, drop: 'turns' },
    },
    engine: createVllmClient({ baseUrl: double.url, model: 'policy' }),
    tokenizer: tiny,
    policyVersion: 0,
    timeoutMs: 10_000,
  });
});
afterAll(() => double?.close());

const rollout = (episode: EpisodeResult, reward: number): Rollout => ({
  task: { id: 't', prompt: '', data: {} },
  group: 0,
  sample: 0,
  policyVersion: 0,
  reward,
  parts: {},
  success: reward > 0,
  failed: false,
  episode,
});

describe('a windowed episode', () => {
  test('returns every segment in the batch with the episode advantage', () => {
    const segments = 1 + windowed.priorSegments!.length;
    expect(segments).toBeGreaterThan(1);
    const batch = assembleBatch(
      [[asGroupMember(rollout(windowed, 1), 'zero'), asGroupMember(rollout(windowed, 0), 'zero')]],
      resolveAlgorithm(AlgorithmSchema.parse({ name: 'grpo', segment_weighting: 'by_tokens' })),
    );
    expect(batch.sequences).toHaveLength(2 * segments);
    const [winner, loser] = batch.advantages[0]!;
    expect(batch.sequences.slice(0, segments).map((s) => s.advantage)).toStrictEqual(Array(segments).fill(winner));
    expect(batch.sequences.slice(segments).map((s) => s.advantage)).toStrictEqual(Array(segments).fill(loser));
  });

  test('returns a trajectory line that stores each shared prefix once and restores every segment', () => {
    const line = trajectoryRecord(rollout(windowed, 1), 1, 1);
    const prior = line.prior_segments as PriorSegmentRecord[];
    // The window keeps the system prompt, tools and task: hundreds of tokens not written again.
    expect(prior.every((p) => (p.shared_prefix ?? 0) > 500)).toBe(true);
    // Each prior segment's ids are written from the end of its shared prefix on: the prefix lives once, in
    // the next segment. (The line also carries each segment's conversation, for the drift audit.)
    expect(prior.map((p) => p.trajectory.ids.length)).toStrictEqual(
      windowed.priorSegments!.map((s, i) => s.trajectory.ids.length - prior[i]!.shared_prefix!),
    );
    const restored = restorePriorSegments(prior, line.trajectory as TrajectoryJSON);
    expect(restored.map((r) => ({ endedBecause: r.endedBecause, trajectory: r.trajectory }))).toStrictEqual(
      windowed.priorSegments!.map((s) => ({ endedBecause: s.endedBecause, trajectory: s.trajectory.toJSON() })),
    );
    // ...each with the conversation it rendered, which the drift audit checks it against.
    expect(restored.map((r) => (r as { messages?: unknown[] }).messages?.[0])).toStrictEqual(
      restored.map(() => ({ role: 'system', content: 'You add.' })),
    );
  });

  test('returns its segments whole after a rollout worker hands it over', () => {
    const back = unpackRollout(structuredClone(packRollout(rollout(windowed, 1))));
    expect(back.episode.priorSegments?.map((s) => [s.endedBecause, s.trajectory.ids])).toStrictEqual(
      windowed.priorSegments!.map((s) => [s.endedBecause, s.trajectory.ids]),
    );
  });

  test('returns the step figures: segments per episode, rewrite reasons, tokens dropped', () => {
    const plain = { ...windowed, priorSegments: undefined, stats: { ...windowed.stats, contextDroppedTokens: 0 } };
    const figures = segmentFigures([rollout(windowed, 1), rollout(plain, 0)]);
    const n = windowed.priorSegments!.length;
    expect(figures).toStrictEqual({
      'segments/per_episode': (n + 1 + 1) / 2,
      'segments/rewrites/sliding_window': n / 2,
      'segments/context_dropped_tokens': windowed.stats.contextDroppedTokens! / 2,
    });
    expect(
      segmentFigures([rollout({ ...plain, stats: { ...plain.stats, contextDroppedTokens: undefined } }, 0)]),
    ).toStrictEqual({});
  });
});
