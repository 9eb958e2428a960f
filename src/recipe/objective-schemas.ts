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
      .enum(['tis', 'mask'])
      .describe(
        'tis: each token (or sequence) loss is weighted by clip(rho, low, high), rho = pi_trainer / pi_engine (truncated importance sampling, Yao et al. 2025); mask: tokens (or sequences) whose rho leaves [low, high] are left out of the loss (their share is the train/mismatch_masked_fraction metric).',
      ),
    level: z
      .enum(['token', 'sequence'])
      .default('token')
      .describe(
        "token: rho_t = exp(logp_trainer(y_t) - logp_engine(y_t)) per token; sequence: rho = prod_t rho_t over the sequence's trained tokens, shared by all of them.",
      ),
    low: z
      .number()
      .nonnegative()
      .optional()
      .describe('Lower bound of rho; default 0 for tis (no lower clip), 0.5 for mask.'),
    high: z.number().positive().optional().describe('Upper bound of rho; default 2.'),
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
