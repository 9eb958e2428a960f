import { describe, expect, it } from 'vitest';
import { assembleBatch, type GroupMember } from './batch.js';
import { PRESETS, resolveAlgorithm } from '../recipe/presets.js';
import { AlgorithmSchema } from '../recipe/schema.js';

const member = (reward: number, opts: { excluded?: boolean; masked?: boolean } = {}): GroupMember => ({
  reward,
  excluded: opts.excluded ?? false,
  success: reward >= 1,
  tokens: { token_ids: [1, 2, 3], loss_mask: opts.masked === false ? [0, 0, 0] : [0, 1, 1], logprobs: [0, -0.5, -0.1] },
});

const algorithm = (name: string) => resolveAlgorithm(AlgorithmSchema.parse({ name }));

describe('assembleBatch', () => {
  it('returns sequences only for groups with signal under grpo', () => {
    const batch = assembleBatch(
      [
        [member(1), member(0)],
        [member(1), member(1)],
      ],
      algorithm('grpo'),
    );
    expect(batch.loss).toBe('pg');
    expect(batch.droppedGroups).toBe(1);
    expect(batch.sequences).toHaveLength(2);
    expect(batch.sequences[0]).toStrictEqual({
      token_ids: [1, 2, 3],
      loss_mask: [0, 1, 1],
      logprobs: [0, -0.5, -0.1],
      advantage: expect.closeTo(1, 5),
    });
    expect(batch.advantages[1]).toStrictEqual([null, null]);
  });

  it('returns only successful episodes with advantage 1 for filtered_sft', () => {
    const batch = assembleBatch(
      [
        [member(1), member(0)],
        [member(1), member(1, { excluded: true })],
      ],
      algorithm('filtered_sft'),
    );
    expect(batch.loss).toBe('sft');
    expect(batch.sequences.map((s) => s.advantage)).toStrictEqual([1, 1]);
    expect(batch.advantages).toStrictEqual([
      [1, null],
      [1, null],
    ]);
  });

  it('returns batch-mean-centred advantages for reinforce and keeps equal-reward groups', () => {
    const batch = assembleBatch(
      [
        [member(1), member(1)],
        [member(0), member(0)],
      ],
      algorithm('reinforce'),
    );
    expect(batch.droppedGroups).toBe(0);
    expect(batch.sequences.map((s) => s.advantage)).toStrictEqual([0.5, 0.5, -0.5, -0.5]);
  });

  it('rejects episodes with no generated tokens from the batch', () => {
    const batch = assembleBatch([[member(1), member(0, { masked: false })]], {
      ...PRESETS.dr_grpo,
      ...AlgorithmSchema.parse({ name: 'dr_grpo' }),
    });
    expect(batch.sequences).toHaveLength(1);
    expect(batch.advantages).toStrictEqual([[0.5, null]]);
  });
});
