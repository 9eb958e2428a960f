import { describe, expect, it } from 'vitest';
import { assembleBatch, isTrainableSuccess, type GroupMember } from './batch.js';
import { resolveAlgorithm } from '../recipe/presets.js';
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
      // rewards 1 and 0: deviation 0.5 over the unbiased std sqrt(0.5)
      advantage: expect.closeTo(Math.SQRT1_2, 5),
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

  it('returns the raw rewards as advantages for plain REINFORCE (baseline none): no batch mean subtracted', () => {
    const plain = resolveAlgorithm(AlgorithmSchema.parse({ name: 'reinforce', baseline: 'none' }));
    const batch = assembleBatch([[member(1), member(1)], [member(0)]], plain);
    expect(batch.sequences.map((s) => s.advantage)).toStrictEqual([1, 1, 0]);
  });

  it('returns a sequence for each earlier segment with model tokens, leaving out one without', () => {
    const prior = (mask: number[]) => ({ token_ids: [7, 8], loss_mask: mask, logprobs: [0, -0.3] });
    const rewritten: GroupMember = { ...member(1), priorTokens: [prior([0, 1]), prior([0, 0])] };
    const batch = assembleBatch([[rewritten, member(0)]], algorithm('dr_grpo'));
    expect(batch.sequences.map((s) => [s.loss_mask, s.advantage])).toStrictEqual([
      [[0, 1], 0.5],
      [[0, 1, 1], 0.5],
      [[0, 1, 1], -0.5],
    ]);
  });

  it('returns truncated episodes in their group baseline but not in the batch under mask_truncated', () => {
    const group = [member(1), { ...member(0), truncated: true }, member(0)];
    const masked = assembleBatch(
      [group],
      resolveAlgorithm(AlgorithmSchema.parse({ name: 'rloo', mask_truncated: true })),
    );
    // leave-one-out: 1 - 0 = 1, 0 - 0.5 = -0.5 for both zeros; the truncated one's advantage is not trained
    expect(masked.advantages).toStrictEqual([[1, null, -0.5]]);
    expect(masked.sequences.map((s) => s.advantage)).toStrictEqual([1, -0.5]);
    expect(assembleBatch([group], algorithm('rloo')).advantages).toStrictEqual([[1, -0.5, -0.5]]);
  });

  it('rejects episodes with no generated tokens from the batch', () => {
    const batch = assembleBatch([[member(1), member(0, { masked: false })]], algorithm('dr_grpo'));
    expect(batch.sequences).toHaveLength(1);
    expect(batch.advantages).toStrictEqual([[0.5, null]]);
  });
});

describe('greedy_sft', () => {
  // one greedy episode per task: a multi-turn trajectory (prompt, model call, tool result, model answer)
  const episode = (reward: number, success: boolean, ids: number[], mask: number[]): GroupMember => ({
    reward,
    excluded: false,
    success,
    tokens: { token_ids: ids, loss_mask: mask, logprobs: mask.map((m, i) => (m ? -0.01 * (i + 1) : 0)) },
  });

  it('keeps successes only: succeeded, not excluded, with model-produced tokens', () => {
    expect(isTrainableSuccess(episode(1, true, [5, 6], [0, 1]))).toBe(true);
    expect(isTrainableSuccess(episode(0.4, false, [5, 6], [0, 1]))).toBe(false);
    expect(isTrainableSuccess({ ...episode(1, true, [5, 6], [0, 1]), excluded: true })).toBe(false);
    expect(isTrainableSuccess(episode(1, true, [5, 6], [0, 0]))).toBe(false);
  });

  it("returns a cross-entropy batch of the successful episodes' exact token ids and loss masks", () => {
    const right = episode(1, true, [10, 11, 12, 901, 902, 20, 21, 903], [0, 0, 0, 1, 1, 0, 0, 1]);
    const wrong = episode(0, false, [10, 11, 13, 904, 905], [0, 0, 0, 1, 1]);
    const alsoRight = episode(1, true, [30, 31, 906], [0, 0, 1]);
    const batch = assembleBatch([[right], [wrong], [alsoRight]], algorithm('greedy_sft'));
    expect(batch.loss).toBe('sft');
    expect(batch.droppedGroups).toBe(0);
    expect(batch.advantages).toStrictEqual([[1], [null], [1]]);
    expect(batch.sequences).toStrictEqual([
      { ...right.tokens, advantage: 1 },
      { ...alsoRight.tokens, advantage: 1 },
    ]);
    // the same arrays the episode recorded, not a re-tokenized copy: ids and mask are passed through untouched
    expect(batch.sequences[0]!.token_ids).toBe(right.tokens.token_ids);
    expect(batch.sequences[0]!.loss_mask).toBe(right.tokens.loss_mask);
  });

  it('trains every segment of a successful episode whose history was rewritten, earlier segments first', () => {
    const earlier = { token_ids: [1, 2, 700], loss_mask: [0, 0, 1], logprobs: [0, 0, -0.2] };
    const member = { ...episode(1, true, [3, 4, 701], [0, 0, 1]), priorTokens: [earlier] };
    const batch = assembleBatch([[member]], algorithm('greedy_sft'));
    expect(batch.sequences.map((s) => s.token_ids)).toStrictEqual([
      [1, 2, 700],
      [3, 4, 701],
    ]);
  });

  it('returns an empty batch when no greedy episode succeeded, so the step trains nothing', () => {
    const batch = assembleBatch([[episode(0, false, [1, 900], [0, 1])]], algorithm('greedy_sft'));
    expect(batch.sequences).toStrictEqual([]);
    expect(batch.advantages).toStrictEqual([[null]]);
  });
});

describe('segment weighting', () => {
  // One episode split in two segments with 1 and 3 trained tokens, against one that is not split.
  const tokens = (trained: number): GroupMember['tokens'] => ({
    token_ids: Array.from({ length: trained + 1 }, (_, i) => i),
    loss_mask: [0, ...Array<number>(trained).fill(1)],
    logprobs: Array<number>(trained + 1).fill(0),
  });
  const split: GroupMember = { reward: 1, excluded: false, success: true, tokens: tokens(3), priorTokens: [tokens(1)] };
  const whole: GroupMember = { reward: 0, excluded: false, success: false, tokens: tokens(4) };
  const advantagesOf = (settings: Record<string, unknown>): number[] =>
    assembleBatch([[split, whole]], resolveAlgorithm(AlgorithmSchema.parse({ name: 'grpo', ...settings })))
      .sequences.slice(0, 2)
      .map((s) => s.advantage!);

  it('returns every segment with the episode advantage under by_tokens and token-mean (each token counts once)', () => {
    const [first, second] = advantagesOf({});
    expect(first).toBeCloseTo(second!);
    expect(first).toBeGreaterThan(0);
  });

  it('returns segment advantages scaled so each segment carries half the episode under equal and token-mean', () => {
    const base = advantagesOf({})[0]!;
    const [first, second] = advantagesOf({ segment_weighting: 'equal' });
    // 4 trained tokens over 2 segments: 2 each; the 1-token segment x2, the 3-token one x2/3.
    expect(first).toBeCloseTo(base * 2);
    expect(second).toBeCloseTo((base * 2) / 3);
    expect(first! * 1 + second! * 3).toBeCloseTo(base * 4);
  });

  it('returns segment advantages in proportion to tokens under by_tokens and seq-mean-token-mean', () => {
    const base = advantagesOf({ loss_aggregation: 'seq-mean-token-mean', segment_weighting: 'equal' })[0]!;
    const [first, second] = advantagesOf({ loss_aggregation: 'seq-mean-token-mean' });
    expect(first).toBeCloseTo(base * 0.5);
    expect(second).toBeCloseTo(base * 1.5);
  });
});
