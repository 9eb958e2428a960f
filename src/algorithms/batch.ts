import { batchBaseline, groupAdvantages, type ScoredEpisode } from './advantages.js';
import { distillAdvantages } from './distill.js';
import { trainsWithCrossEntropy, type ResolvedAlgorithm } from '../recipe/presets.js';
import type { TrainSequence } from '../trainer/client.js';

/**
 * The token view of one episode that training needs (a subset of TokenTrajectory), named as the
 * trainer's wire names it: token ids, the loss mask (1 on tokens the engine generated) and the
 * behaviour logprobs (0 where the mask is 0).
 */
export type TrainableTokens = Pick<TrainSequence, 'token_ids' | 'loss_mask'> & { readonly logprobs: readonly number[] };

/** One scored episode of a group, ready for batch assembly. */
export interface GroupMember extends ScoredEpisode {
  readonly tokens: TrainableTokens;
  /** Earlier segments of the same episode (a gateway agent rewrote its history): trained with the same advantage. */
  readonly priorTokens?: readonly TrainableTokens[];
  /** The episode hit a generation limit (a turn's max_new_tokens or the episode's max_total_tokens). */
  readonly truncated?: boolean;
  /** algorithm distill: the teacher's logprob of each token of `priorTokens`, then `tokens` (null where unscored). */
  readonly teacherLogprobs?: readonly (readonly (number | null)[])[];
}

/** A step's batch and what was left out of it. */
export interface AssembledBatch {
  readonly loss: 'pg' | 'sft';
  readonly sequences: TrainSequence[];
  readonly groups: number;
  /** Groups dropped because every reward was equal (no learning signal). */
  readonly droppedGroups: number;
  /** Per group, per member: the advantage used, or null when the episode was not trained on. */
  readonly advantages: (number | null)[][];
  /** algorithm distill: mean log pi_student - log pi_teacher over the trained tokens, and their count. */
  readonly distill?: { readonly reverseKl: number; readonly tokens: number };
}

/**
 * Turn scored groups into the trainer's batch, following the resolved algorithm:
 * advantages per group, zero-signal groups dropped (when the preset says so), the batch-mean
 * baseline for reinforce, and for the cross-entropy algorithms (sft, filtered_sft, greedy_sft) only
 * successful episodes with a plain CE loss.
 */
export function assembleBatch(
  groups: readonly (readonly GroupMember[])[],
  algorithm: ResolvedAlgorithm,
): AssembledBatch {
  if (trainsWithCrossEntropy(algorithm.name)) return assembleSuccessSft(groups);
  let droppedGroups = 0;
  const perGroup = groups.map((members) => {
    const { advantages, hasSignal } = groupAdvantages(members, algorithm);
    if (!hasSignal && algorithm.drop_zero_variance_groups) {
      droppedGroups++;
      return members.map(() => Number.NaN);
    }
    return [...advantages];
  });
  const flat = algorithm.baseline === 'batch_mean' ? batchBaseline(perGroup.flat()) : perGroup.flat();
  const sequences: TrainSequence[] = [];
  const advantages: (number | null)[][] = [];
  const distill =
    algorithm.name === 'distill' ? { weight: algorithm.distill?.reward_weight ?? 0, kl: 0, tokens: 0 } : undefined;
  let k = 0;
  for (const members of groups) {
    const row: (number | null)[] = [];
    for (const member of members) {
      const advantage = flat[k++]!;
      const masked = algorithm.mask_truncated && member.truncated === true;
      if (Number.isNaN(advantage) || member.excluded || masked || !hasTrainableTokens(member.tokens)) {
        row.push(null);
        continue;
      }
      if (distill) {
        // the recorded advantage is the task term; each token's own adds the teacher's
        const task = distill.weight * advantage;
        row.push(task);
        const segments = memberSegments(member);
        const scales = segmentScales(
          segments.map(([tokens]) => tokens),
          algorithm,
        );
        for (const [i, [tokens, teacher]] of segments.entries()) {
          const scored = distillAdvantages(tokens, teacher, task);
          distill.kl += scored.reverseKlSum;
          distill.tokens += scored.tokens;
          sequences.push({ ...tokens, advantages: scored.advantages.map((a) => a * scales[i]!) });
        }
        continue;
      }
      row.push(advantage);
      const segments = memberTokens(member);
      const scales = segmentScales(segments, algorithm);
      for (const [i, tokens] of segments.entries()) sequences.push(toSequence(tokens, advantage * scales[i]!));
    }
    advantages.push(row);
  }
  return {
    loss: 'pg',
    sequences,
    groups: groups.length,
    droppedGroups,
    advantages,
    ...(distill
      ? { distill: { reverseKl: distill.tokens ? distill.kl / distill.tokens : 0, tokens: distill.tokens } }
      : {}),
  };
}

/**
 * Every trainable segment of a distill member with the teacher's logprobs of its tokens.
 * @throws Error when the member was not scored by the teacher (the step's teacher phase did not run).
 */
function memberSegments(member: GroupMember): [TrainableTokens, readonly (number | null)[]][] {
  const segments = [...(member.priorTokens ?? []), member.tokens];
  const scores = member.teacherLogprobs;
  if (scores?.length !== segments.length)
    throw new Error('distill: an episode reached the batch without teacher scores');
  return segments.flatMap((tokens, i) => (hasTrainableTokens(tokens) ? [[tokens, scores[i]!] as const] : [])) as [
    TrainableTokens,
    readonly (number | null)[],
  ][];
}

/**
 * The success filter of the cross-entropy algorithms: an episode is trained on when it succeeded
 * (reward at or above reward.success_threshold), was not excluded, and the model produced tokens in it.
 */
export function isTrainableSuccess(member: GroupMember): boolean {
  return member.success && !member.excluded && hasTrainableTokens(member.tokens);
}

/** Cross-entropy on the exact tokens of the successful episodes (advantage 1), every other episode left out. */
function assembleSuccessSft(groups: readonly (readonly GroupMember[])[]): AssembledBatch {
  const sequences: TrainSequence[] = [];
  const advantages = groups.map((members) =>
    members.map((m) => {
      if (!isTrainableSuccess(m)) return null;
      for (const tokens of memberTokens(m)) sequences.push(toSequence(tokens, 1));
      return 1;
    }),
  );
  return { loss: 'sft', sequences, groups: groups.length, droppedGroups: 0, advantages };
}

/**
 * The factor on each segment's advantage that splits the episode's weight among its segments as
 * `algorithm.segment_weighting` says, keeping the episode's total weight what it is without scaling
 * (segments trained as they are). The policy-gradient losses are linear in the advantage (PPO's clip
 * included, the factor being positive), so the factor scales the segment's share of the loss. Under a
 * token-summed aggregation a segment weighs its trained tokens: by_tokens is the segments as they are,
 * equal gives each N/k of the episode's N tokens. Under seq-mean-token-mean each segment weighs 1: equal
 * is as they are, by_tokens gives each k n_i / N.
 */
export function segmentScales(
  segments: readonly TrainableTokens[],
  algorithm: Pick<ResolvedAlgorithm, 'loss_aggregation' | 'segment_weighting'>,
): number[] {
  const k = segments.length;
  if (k <= 1) return segments.map(() => 1);
  const counts = segments.map((t) => t.loss_mask.reduce((a, m) => a + m, 0));
  const total = counts.reduce((a, n) => a + n, 0);
  const perSequence = algorithm.loss_aggregation === 'seq-mean-token-mean';
  const byTokens = (algorithm.segment_weighting ?? 'by_tokens') === 'by_tokens';
  if (perSequence === byTokens) return counts.map((n) => (perSequence ? (k * n) / total : total / (k * n)));
  return counts.map(() => 1);
}

/** Every trainable segment of a member, its earlier segments first. */
function memberTokens(member: GroupMember): TrainableTokens[] {
  return [...(member.priorTokens ?? []), member.tokens].filter(hasTrainableTokens);
}

function hasTrainableTokens(tokens: TrainableTokens): boolean {
  return tokens.loss_mask.some((m) => m === 1);
}

function toSequence(tokens: TrainableTokens, advantage: number): TrainSequence {
  return { ...tokens, advantage };
}
