import { z } from 'zod';
import {
  domainSpec,
  episodeDb,
  evaluateEpisode,
  Tau2EnvOptionsSchema,
  terminationOf,
  transcriptOf,
  type Tau2Task,
} from '../domains/tau2/index.js';
import { parseComponentOptions } from '../util/component-options.js';
import { tau2NlJudge, Tau2JudgeSchema } from './tau2-judge.js';
import type { RewardDefinition, RewardFn } from './types.js';

/**
 * The tau2 evaluator as a reward (options `domain`, `release`, `basis`: task | judge_free, and
 * `judge`: an OpenAI-compatible chat endpoint, see {@link Tau2JudgeSchema}).
 * Reward = product of the task's reward_basis parts (or [DB, COMMUNICATE] with judge_free); 0 when
 * the episode did not end by a stop token. NL_ASSERTION is graded by the judge; without one it is
 * dropped from the basis and the run warns once. A judge that cannot be reached or answers
 * nonsense makes the episode fail with the reason (a failed rollout, not a 0). Parts and the
 * judge's verdicts are returned for the trajectory record.
 */
const Tau2RewardOptions = Tau2EnvOptionsSchema.extend({
  basis: z
    .enum(['task', 'judge_free'])
    .default('task')
    .describe("task: the task's own reward_basis; judge_free: [DB, COMMUNICATE]."),
  judge: Tau2JudgeSchema.optional().describe('An OpenAI-compatible chat endpoint that grades NL_ASSERTION.'),
});

export const tau2Reward: RewardDefinition = {
  name: 'tau2',
  options: Tau2RewardOptions,
  async create(options, ctx): Promise<RewardFn> {
    const {
      domain,
      release,
      basis,
      judge: judgeOptions,
    } = parseComponentOptions(Tau2RewardOptions, options, 'reward.options');
    const judge = tau2NlJudge(judgeOptions, 'reward.options.judge');
    const spec = domainSpec(domain, release);
    let warned = false;
    return async (outcome) => {
      const task = outcome.task.data.tau2 as Tau2Task;
      const transcript = transcriptOf(outcome.messages);
      const evaluation = await evaluateEpisode({
        task,
        spec,
        db: episodeDb(outcome.env.state),
        toolCalls: outcome.toolCalls,
        transcript,
        termination: terminationOf(outcome.env.state, transcript, outcome.finishReason),
        basis,
        ...(judge ? { judge: judge(outcome.messages, outcome.env.signal) } : {}),
      });
      if (evaluation.dropped.length > 0 && !warned) {
        warned = true;
        ctx.warn(
          `tau2: ${evaluation.dropped.join(', ')} needs an LLM judge and was left out of the reward (set reward.options.judge to grade it, or reward.options.basis: judge_free to silence this)`,
        );
      }
      const violations = spec.policyViolations?.(outcome.messages);
      return {
        score: evaluation.reward,
        parts: evaluation.parts,
        info: { basis: evaluation.basis, ...evaluation.info, ...(violations ? { policy_violations: violations } : {}) },
      };
    };
  },
};
