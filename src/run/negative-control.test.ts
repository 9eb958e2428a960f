import { describe, expect, test } from 'vitest';
import type { GroupMember } from '../algorithms/batch.js';
import { InputError } from '../errors/index.js';
import { applyNegativeControl, negativeControl } from './negative-control.js';

/** Prompt 0 0, model 1 1, tool result 0, model 1: what a one-call episode's mask looks like. */
function member(reward: number): GroupMember {
  return {
    reward,
    success: reward >= 1,
    excluded: false,
    tokens: { token_ids: [1, 2, 3, 4, 5, 6], loss_mask: [0, 0, 1, 1, 0, 1], logprobs: [0, 0, -0.5, -0.2, 0, -1] },
  };
}

describe('negativeControl', () => {
  test('returns nothing when unset, the control named, and rejects an unknown one', () => {
    expect([
      negativeControl({}),
      negativeControl({ ATK_NEGATIVE_CONTROL: '' }),
      negativeControl({ ATK_NEGATIVE_CONTROL: 'shuffle_rewards' }),
      negativeControl({ ATK_NEGATIVE_CONTROL: 'train_environment_tokens' }),
      negativeControl({ ATK_NEGATIVE_CONTROL: 'train_first_model_turn_only' }),
    ]).toStrictEqual([
      undefined,
      undefined,
      'shuffle_rewards',
      'train_environment_tokens',
      'train_first_model_turn_only',
    ]);
    expect(() => negativeControl({ ATK_NEGATIVE_CONTROL: 'mask' })).toThrow(InputError);
  });
});

describe('applyNegativeControl', () => {
  test('returns every token after the prompt trained for train_environment_tokens, the prompt still not', () => {
    const [[broken]] = applyNegativeControl([[member(1)]], 'train_environment_tokens', 0);
    expect(broken!.tokens).toStrictEqual({ ...member(1).tokens, loss_mask: [0, 0, 1, 1, 1, 1] });
  });

  test('returns only the first model turn trained for train_first_model_turn_only, rewards untouched', () => {
    const [[broken, untouched]] = applyNegativeControl([[member(1), member(0)]], 'train_first_model_turn_only', 0);
    expect(broken!.tokens).toStrictEqual({ ...member(1).tokens, loss_mask: [0, 0, 1, 1, 0, 0] });
    expect([broken!.reward, untouched!.reward]).toStrictEqual([1, 0]);
    const oneTurn = { ...member(1), tokens: { ...member(1).tokens, loss_mask: [0, 0, 0, 1, 1, 1] } };
    const [[same]] = applyNegativeControl([[oneTurn]], 'train_first_model_turn_only', 0);
    expect(same!.tokens.loss_mask).toStrictEqual([0, 0, 0, 1, 1, 1]);
  });

  test('returns the same rewards permuted across all the episodes of the step for shuffle_rewards', () => {
    const groups = [
      [member(1), member(0), member(0), member(0)],
      [member(0), member(0), member(0), member(0)],
      [member(1), member(1), member(1), member(1)],
    ];
    const shuffled = applyNegativeControl(groups, 'shuffle_rewards', 3);
    const rewards = (gs: readonly (readonly GroupMember[])[]) => gs.flat().map((m) => m.reward);
    expect(rewards(shuffled).sort()).toStrictEqual(rewards(groups).sort());
    expect(rewards(shuffled)).not.toStrictEqual(rewards(groups));
    expect(shuffled.flat().every((m) => m.success === m.reward >= 1)).toBe(true);
    expect(shuffled.map((g) => g.length)).toStrictEqual([4, 4, 4]);
  });
});
