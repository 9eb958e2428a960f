import { describe, expect, test } from 'vitest';
import type { Rollout } from '../rollout/collect.js';
import type { EpisodeResult } from '../rollout/episode.js';
import { conversationFigures } from './step-record.js';

function rollout(userTurns: number, violations?: string[]): Rollout {
  return {
    task: { id: 't', prompt: '', data: {} },
    group: 0,
    sample: 0,
    policyVersion: 0,
    reward: 0,
    parts: {},
    success: false,
    failed: false,
    ...(violations ? { rewardInfo: { policy_violations: violations } } : {}),
    episode: { stats: { userTurns } } as EpisodeResult,
  };
}

describe('conversationFigures', () => {
  test('returns nothing for single-turn episodes whose reward checks no policy', () => {
    expect(conversationFigures([rollout(1), rollout(1)])).toStrictEqual({});
  });

  test('returns user turns per episode once a simulated user spoke after the prompt', () => {
    expect(conversationFigures([rollout(1), rollout(4)])).toStrictEqual({ user_turns_per_episode: 2.5 });
  });

  test('returns policy violations per episode when the reward lists them, an episode without a list counting 0', () => {
    expect(conversationFigures([rollout(3, ['a', 'b']), rollout(2, []), rollout(1)])).toStrictEqual({
      user_turns_per_episode: 2,
      policy_violations_per_episode: 2 / 3,
    });
  });
});
