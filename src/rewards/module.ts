import { resolve } from 'node:path';
import { z } from 'zod';
import { InputError } from '../errors/index.js';
import { parseComponentOptions } from '../util/component-options.js';
import { loadUserModule } from '../util/load-module.js';
import type { EpisodeOutcome, RewardDefinition, RewardFn } from './types.js';
import { userRewardResult } from './user-result.js';

const ModuleRewardOptions = z.strictObject({
  module: z.string().min(1),
  export: z.string().min(1).optional(),
  options: z.record(z.string(), z.unknown()).default({}),
});

/** The function a reward module exports. */
export type UserRewardFunction = (outcome: EpisodeOutcome, options: Readonly<Record<string, unknown>>) => unknown;

/**
 * Reward `module` (what `reward: {module: ./grade.ts, export: grade}` becomes): a function a user's
 * TypeScript or JavaScript file exports, called as `grade(outcome, options)` with the task, final
 * answer text, messages and tool calls; it returns (or resolves to) a number or a record of named
 * parts. Without `export`, the default export.
 * @throws InputError when the module cannot be loaded or the export is not a function.
 */
export const moduleReward: RewardDefinition = {
  name: 'module',
  options: ModuleRewardOptions,
  async create(options, ctx): Promise<RewardFn> {
    const parsed = parseComponentOptions(ModuleRewardOptions, options, 'reward');
    const file = resolve(ctx.recipeDir, parsed.module);
    const grade = rewardFunction(await loadUserModule(file), file, parsed.export);
    const where = `${parsed.module}#${parsed.export ?? 'default'}`;
    return async (outcome) => userRewardResult(await grade(outcome, parsed.options), where);
  },
};

/**
 * The reward function among a module's exports.
 * @throws InputError naming the module when the export is missing or not a function.
 */
export function rewardFunction(
  exports: Readonly<Record<string, unknown>>,
  file: string,
  name = 'default',
): UserRewardFunction {
  if (!(name in exports)) {
    throw new InputError(`${file}: no export '${name}'; it exports ${Object.keys(exports).join(', ') || 'nothing'}`, {
      hint: "set reward.export to the function's name",
    });
  }
  const value = exports[name];
  if (typeof value !== 'function')
    throw new InputError(`${file}: export '${name}' is ${value === null ? 'null' : typeof value}, not a function`);
  return value as UserRewardFunction;
}
