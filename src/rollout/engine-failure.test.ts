import { describe, expect, test } from 'vitest';
import { EpisodeFailure } from '../agent/episode-failure.js';
import { ProviderError } from '../errors/index.js';
import type { Task } from '../datasets/types.js';
import { rolloutOnThrow, type Rollout } from './collect.js';
import { everyEpisodeFailedInEngine } from './engine-failure.js';

const task: Task = { id: 't1', prompt: 'What is 2+2?', answer: '4', data: {} };
/** A rollout whose episode threw `error`, as the scheduler records it. */
const thrown = (error: unknown, sample = 0): Rollout => rolloutOnThrow(3)({ task, group: 0, sample }, error);
const refused = (sample: number): Rollout =>
  thrown(new ProviderError('vllm POST /v1/completions: connection refused (127.0.0.1:8000)'), sample);

describe('everyEpisodeFailedInEngine', () => {
  test('returns the error that fails the run when every episode failed in the engine, naming the first', () => {
    const error = everyEpisodeFailedInEngine([refused(0), refused(1), refused(2)], 'step 4');
    expect(error).toBeInstanceOf(ProviderError);
    expect(error?.message).toBe(
      'step 4: all 3 episodes failed in the engine; the first: vllm POST /v1/completions: connection refused (127.0.0.1:8000)',
    );
  });

  test('returns nothing when one episode did not fail, or failed elsewhere, or there were none', () => {
    const tool = thrown(new EpisodeFailure('reward', new Error('reward crashed')), 1);
    const passed: Rollout = { ...refused(2), failed: false };
    expect([
      everyEpisodeFailedInEngine([refused(0), tool], 'step 1'),
      everyEpisodeFailedInEngine([refused(0), passed], 'step 1'),
      everyEpisodeFailedInEngine([], 'eval step-00000'),
    ]).toStrictEqual([undefined, undefined, undefined]);
  });
});
