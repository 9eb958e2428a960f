/** What the advantage reads of one token segment (batch.ts's TrainableTokens has these fields). */
interface ScoredTokens {
  readonly token_ids: readonly number[];
  readonly loss_mask: readonly number[];
  readonly logprobs: readonly number[];
}

/** One segment's distillation advantages and its share of the step's reverse KL. */
export interface DistillAdvantages {
  /** Per token: log pi_teacher - log pi_student + the task term on trained tokens, 0 elsewhere. */
  readonly advantages: number[];
  /** Sum over trained tokens of log pi_student - log pi_teacher (the sampled-token reverse KL estimate). */
  readonly reverseKlSum: number;
  readonly tokens: number;
}

/**
 * On-policy distillation's per-token advantage (Thinking Machines, "On-Policy Distillation", 2025; the
 * tinker-cookbook recipe): the negative reverse KL of the sampled token, log pi_teacher(y_t) - log
 * pi_student(y_t), with discount 0 (each token answers for itself), plus `taskAdvantage` (the reward's
 * group advantage times algorithm.distill.reward_weight). Only tokens the model generated (loss mask 1)
 * carry one; the student logprobs are the engine's, those the tokens were sampled with.
 * @throws Error when the teacher left a trained token unscored (a scorer bug, not user input).
 */
export function distillAdvantages(
  tokens: ScoredTokens,
  teacherLogprobs: readonly (number | null)[],
  taskAdvantage: number,
): DistillAdvantages {
  if (teacherLogprobs.length !== tokens.token_ids.length)
    throw new Error(`teacher scored ${teacherLogprobs.length} of ${tokens.token_ids.length} tokens`);
  let reverseKlSum = 0;
  let count = 0;
  const advantages = tokens.loss_mask.map((m, t) => {
    if (m !== 1) return 0;
    const teacher = teacherLogprobs[t];
    if (teacher === null || teacher === undefined) throw new Error(`teacher left trained token ${t} unscored`);
    const reverseKl = tokens.logprobs[t]! - teacher;
    reverseKlSum += reverseKl;
    count++;
    return -reverseKl + taskAdvantage;
  });
  return { advantages, reverseKlSum, tokens: count };
}
