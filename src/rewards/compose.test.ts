import { describe, expect, it } from 'vitest';
import { ConfigError } from '../errors/index.js';
import { RewardSchema } from '../recipe/schema.js';
import { composeReward } from './compose.js';
import { rewards } from './index.js';
import type { EpisodeOutcome } from './types.js';

rewards.register('test_length', async () => ({
  name: 'test_length',
  create: async (options) => async (o) => ({
    score: o.finalText.length * Number(options.scale ?? 1),
    parts: { chars: o.finalText.length },
  }),
}));
rewards.register('test_contains', async () => ({
  name: 'test_contains',
  create: async (options) => async (o) => (o.finalText.includes(String(options.word)) ? 1 : 0),
}));

const outcome = (finalText: string) => ({ finalText }) as unknown as EpisodeOutcome;
const ctx = { recipeDir: '.', warn: () => {} };

describe('composeReward', () => {
  it('returns a single reward with its own parts', async () => {
    const reward = await composeReward(RewardSchema.parse({ name: 'test_length', options: { scale: 2 } }), ctx);
    expect(await reward(outcome('abc'))).toStrictEqual({ score: 6, parts: { chars: 3 } });
  });

  it('returns a weighted sum with every component logged as a part', async () => {
    const config = RewardSchema.parse({
      components: [
        { name: 'test_contains', weight: 0.5, options: { word: 'yes' } },
        { name: 'test_length', weight: 0.1 },
      ],
    });
    const reward = await composeReward(config, ctx);
    const scored = await reward(outcome('yes!'));
    expect(scored.score).toBeCloseTo(0.9);
    expect(scored.parts).toStrictEqual({ test_contains: 1, test_length: 4, 'test_length.chars': 4 });
  });

  it('rejects an unknown reward with a suggestion', async () => {
    const error = await composeReward(RewardSchema.parse({ name: 'test_lenght' }), ctx, 'r.yaml').catch((e) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toContain("reward.name: unknown reward 'test_lenght' (did you mean 'test_length'?)");
  });
});
