/**
 * The recipe keys that shape the objective beyond the algorithm's name: the trainer/engine mismatch
 * correction (`algorithm.mismatch`) and DAPO's overlong reward shaping (`reward.overlong`). Their
 * descriptions carry the formulas, so docs/recipes.md and `atk explain` state them.
 */
import { z } from 'zod';
import { positiveInt } from './schema-parts.js';

export const MismatchSchema = z
  .strictObject({
    mode: z
      .enum(['tis', 'mask', 'reject'])
      .describe(
        "tis: each token (or sequence) loss is weighted by clip(rho, low, high), rho = pi_trainer / pi_engine (truncated importance sampling, Yao et al. 2025); mask: weighted by rho where low <= rho <= high and 0 outside (IcePop, Ling team 2025; masked importance sampling); reject: weighted 1 inside and 0 outside (rejection without an importance weight, verl's rollout_rs). The share left out is the train/mismatch_masked_fraction metric.",
      ),
    level: z
      .enum(['token', 'sequence', 'geometric'])
      .default('token')
      .describe(
        "token: rho_t = exp(logp_trainer(y_t) - logp_engine(y_t)) per token; sequence: rho = prod_t rho_t over the sequence's trained tokens, shared by all of them (Seq-TIS / Seq-MIS); geometric: their geometric mean exp(mean_t log rho_t), which does not grow with the sequence's length (Geo-RS).",
      ),
    low: z
      .number()
      .nonnegative()
      .optional()
      .describe('Lower bound of rho; default 0 for tis (no lower clip), 0.5 for mask and reject.'),
    high: z.number().positive().optional().describe('Upper bound of rho; default 2.'),
    masked_tokens: z
      .enum(['count', 'drop'])
      .default('count')
      .describe(
        "mask and reject: a token outside [low, high] gets weight 0 but stays in the aggregation's token and sequence counts (count: IcePop's 1/|y_i| over every token, as slime does), or leaves them (drop: as verl's rejection sampling edits the response mask; costs one forward pass without gradient per step).",
      ),
    trust_region: z
      .boolean()
      .optional()
      .describe(
        "PPO's loss only: also give no gradient to a token PPO would clip against the engine's logprobs (ratio pi / pi_engine past 1 + clip_high with A > 0, or below 1 - clip_low with A < 0), keeping PPO's trust region at the policy that sampled. In neither TIS's nor IcePop's paper. Default false; true where the correction comes from rollout.max_staleness or tis_cap (without it stale rollouts collapsed the quickstart).",
      ),
  })
  .superRefine((m, ctx) => {
    if (m.low !== undefined && m.high !== undefined && m.low >= m.high)
      ctx.addIssue({ code: 'custom', path: ['low'], message: `must be below high (${m.high}), got ${m.low}` });
  })
  .describe(
    "Correction for the engine sampling from another distribution than the trainer computes (kernels, dtype; with rollout.max_staleness > 0 also older weights), from rho = pi_trainer / pi_engine, pi_trainer under the weights the step starts from. With it the PPO/GSPO/CISPO ratio is taken against the trainer's own pre-update logprobs and rho is corrected separately (decoupled PPO).",
  );

export const OverlongSchema = z
  .strictObject({
    max_tokens: positiveInt.describe(
      "L_max: the generation budget the penalty ends at, in generated tokens of the episode (every model turn's, summed).",
    ),
    buffer: positiveInt.describe(
      'L_cache: the penalty rises linearly over the last `buffer` tokens before max_tokens; at most max_tokens.',
    ),
  })
  .superRefine((o, ctx) => {
    if (o.buffer > o.max_tokens)
      ctx.addIssue({
        code: 'custom',
        path: ['buffer'],
        message: `must be at most max_tokens (${o.max_tokens}), got ${o.buffer}`,
      });
  })
  .describe(
    'Soft overlong punishment (DAPO, Yu et al. 2025, arXiv 2503.14476, eq. 13), added to the reward: 0 if |y| <= L_max - L_cache; ((L_max - L_cache) - |y|) / L_cache inside the buffer; -1 past L_max. |y| = generated tokens of the episode. Logged as the reward part `overlong`; success (reward.success_threshold) is judged before it.',
  );

export type MismatchConfig = z.infer<typeof MismatchSchema>;
export type OverlongConfig = z.infer<typeof OverlongSchema>;
