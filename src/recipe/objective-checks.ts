/**
 * Combinations of objective keys that make no sense, refused before anything runs: each check names the key
 * to point at and says why in one line. One function per rule; a new objective key adds its own here.
 */
import { policyLoss, trainsWithCrossEntropy } from './presets.js';
import type { ResolvedRecipe } from './resolve.js';

/** A problem at a dotted key path (the loader locates it in the file or override that wrote it). */
export interface ObjectiveProblem {
  readonly path: string;
  readonly message: string;
}

type ObjectiveCheck = (recipe: ResolvedRecipe) => ObjectiveProblem | undefined;

/** The rules, in the order their problems are listed. */
export const OBJECTIVE_CHECKS: readonly ObjectiveCheck[] = [
  gspoTokenMasking,
  dualClipOutsidePpo,
  trustRegionOutsidePpo,
  droppedCountWithoutMasking,
  overlongWithoutEpisodes,
  maskTruncatedWithoutEpisodes,
  overlongPastTheBudget,
];

/** Every problem the objective's keys have together. */
export function objectiveProblems(recipe: ResolvedRecipe): ObjectiveProblem[] {
  return OBJECTIVE_CHECKS.map((check) => check(recipe)).filter((p): p is ObjectiveProblem => p !== undefined);
}

/** GSPO's ratio is one per sequence, normalised by its length: dropping some of its tokens changes both. */
function gspoTokenMasking({ algorithm }: ResolvedRecipe): ObjectiveProblem | undefined {
  const m = algorithm.mismatch;
  if (algorithm.name !== 'gspo' || m === undefined || m.mode === 'tis' || m.level !== 'token') return undefined;
  return {
    path: 'algorithm.mismatch.level',
    message:
      'token-level masking under gspo drops tokens from a sequence whose ratio and clip are per sequence (the mean over its tokens); use level: sequence or geometric',
  };
}

/** Dual-clip bounds PPO's ratio term; the other losses have none (or, for sft, no advantage). */
function dualClipOutsidePpo({ algorithm }: ResolvedRecipe): ObjectiveProblem | undefined {
  if (algorithm.dual_clip === undefined || ppoLoss(algorithm.name)) return undefined;
  return {
    path: 'algorithm.dual_clip',
    message: `does nothing with algorithm ${algorithm.name}: dual-clip bounds PPO's clipped ratio term`,
  };
}

function trustRegionOutsidePpo({ algorithm }: ResolvedRecipe): ObjectiveProblem | undefined {
  if (!algorithm.mismatch?.trust_region || ppoLoss(algorithm.name)) return undefined;
  return {
    path: 'algorithm.mismatch.trust_region',
    message: `does nothing with algorithm ${algorithm.name}: the trust region is PPO's clip taken against the engine's logprobs`,
  };
}

function droppedCountWithoutMasking({ algorithm }: ResolvedRecipe): ObjectiveProblem | undefined {
  const m = algorithm.mismatch;
  if (m?.mode !== 'tis' || m.masked_tokens !== 'drop') return undefined;
  return {
    path: 'algorithm.mismatch.masked_tokens',
    message: 'does nothing with mode tis, which masks no token; drop goes with mode mask or reject',
  };
}

function ppoLoss(name: ResolvedRecipe['algorithm']['name']): boolean {
  return !trainsWithCrossEntropy(name) && policyLoss(name) === 'ppo';
}

function overlongWithoutEpisodes({ algorithm, reward }: ResolvedRecipe): ObjectiveProblem | undefined {
  if (reward.overlong === undefined || algorithm.name !== 'sft') return undefined;
  return { path: 'reward.overlong', message: 'does nothing with algorithm sft, which samples no episodes' };
}

function maskTruncatedWithoutEpisodes({ algorithm }: ResolvedRecipe): ObjectiveProblem | undefined {
  if (!algorithm.mask_truncated || algorithm.name !== 'sft') return undefined;
  return { path: 'algorithm.mask_truncated', message: 'does nothing with algorithm sft, which samples no episodes' };
}

/** A penalty that starts past the most an episode can generate never applies: a budget from another recipe. */
function overlongPastTheBudget({ reward, agent }: ResolvedRecipe): ObjectiveProblem | undefined {
  if (reward.overlong === undefined) return undefined;
  const start = reward.overlong.max_tokens - reward.overlong.buffer;
  const most = agent.max_new_tokens * agent.max_turns;
  if (start < most) return undefined;
  return {
    path: 'reward.overlong.max_tokens',
    message: `the penalty starts at max_tokens - buffer = ${start} generated tokens, but an episode generates at most agent.max_new_tokens x agent.max_turns = ${most}: it never applies`,
  };
}
