import { ConfigError } from '../errors/index.js';
import type { RewardConfig } from '../recipe/schema.js';
import { rewardComponents } from './components.js';
import { rewards } from './index.js';
import type { EpisodeOutcome, RewardResult, RewardRunContext } from './types.js';

/** A reward's verdict on one episode, normalised: the score and every named part. */
export interface Scored {
  readonly score: number;
  readonly parts: Readonly<Record<string, number>>;
  readonly info?: Readonly<Record<string, unknown>>;
}

export type ComposedReward = (outcome: EpisodeOutcome) => Promise<Scored>;

/**
 * Build the recipe's reward: one reward (registered, module, command or judge), or a weighted sum
 * of components where each component's score (and its own parts, prefixed by its label) is kept
 * as a part for logging. Every kind is found through the reward registry.
 * @throws ConfigError when a name is not registered or a component rejects its options.
 */
export async function composeReward(
  config: RewardConfig,
  ctx: RewardRunContext,
  recipeFile = '<recipe>',
): Promise<ComposedReward> {
  const components = rewardComponents(config);
  if (components.length === 0) {
    throw new ConfigError([
      {
        file: recipeFile,
        line: 1,
        col: 1,
        path: 'reward',
        message: 'name a reward (name, module, command or judge) or give components',
      },
    ]);
  }
  const built = await Promise.all(
    components.map(async (c) => {
      if (!rewards.has(c.name)) {
        throw new ConfigError([
          { file: recipeFile, line: 1, col: 1, path: `${c.path}.name`, message: rewards.unknownMessage(c.name) },
        ]);
      }
      const definition = await rewards.get(c.name);
      return { name: c.label, weight: c.weight, fn: await definition.create(c.options, ctx) };
    }),
  );
  const single = built.length === 1 && built[0]!.weight === 1;
  return async (outcome) => {
    let score = 0;
    const parts: Record<string, number> = {};
    let info: Record<string, unknown> | undefined;
    for (const component of built) {
      const result = normalise(await component.fn(outcome));
      score += component.weight * result.score;
      if (single) {
        Object.assign(parts, result.parts);
        info = result.info ? { ...result.info } : undefined;
      } else {
        parts[component.name] = result.score;
        for (const [k, v] of Object.entries(result.parts)) parts[`${component.name}.${k}`] = v;
        if (result.info) (info ??= {})[component.name] = result.info;
      }
    }
    return info ? { score, parts, info } : { score, parts };
  };
}

function normalise(result: RewardResult): Scored {
  if (typeof result === 'number') return { score: finite(result), parts: {} };
  return {
    score: finite(result.score),
    parts: { ...(result.parts ?? {}) },
    ...(result.info ? { info: result.info } : {}),
  };
}

/** A NaN or infinite reward would poison the advantages; treat it as 0 (and the episode shows it in info). */
function finite(x: number): number {
  return Number.isFinite(x) ? x : 0;
}
