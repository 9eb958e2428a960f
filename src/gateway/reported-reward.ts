import type { RewardDefinition } from '../rewards/types.js';

/** Where an external episode leaves the reward its agent reported, for the `reported` reward to read. */
export const REPORTED_REWARD_KEY = 'atk.reported_reward';

/**
 * `reward: {name: reported}`: the score the external agent reported itself, through
 * `POST /episodes/<id>/reward` or `reward` in its JSON result.
 */
export const reportedReward: RewardDefinition = {
  name: 'reported',
  create: () =>
    Promise.resolve(async ({ env }) => {
      const value = env.state.get(REPORTED_REWARD_KEY);
      if (typeof value !== 'number')
        throw new Error("the agent reported no reward (POST /episodes/<id>/reward or 'reward' in its result)");
      return value;
    }),
};
