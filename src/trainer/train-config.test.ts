import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { resolveAlgorithm } from '../recipe/presets.js';
import { AlgorithmSchema, TrainerSchema } from '../recipe/schema.js';
import { projectRoot } from '../util/paths.js';
import { trainConfigFromRecipe } from './train-config.js';

/** The objective keys of a recipe's algorithm section as the trainer receives them. */
function objectiveKeys(algorithm: unknown, maxStaleness = 0): Record<string, unknown> {
  const config = trainConfigFromRecipe(
    resolveAlgorithm(AlgorithmSchema.parse(algorithm), maxStaleness),
    TrainerSchema.parse({}),
    { seed: 0, totalSteps: 10 },
  );
  const { loss, policy_loss, loss_aggregation, clip_low, clip_high, dual_clip, mismatch, kl_coef, kl_estimator } =
    config;
  return { loss, policy_loss, loss_aggregation, clip_low, clip_high, dual_clip, mismatch, kl_coef, kl_estimator };
}

/** The shared fixture: each recipe's algorithm section and the train config it becomes; pytest parses the same. */
const FIXTURE = JSON.parse(
  readFileSync(join(projectRoot(), 'trainer', 'protocol', 'train_config.objectives.json'), 'utf8'),
) as { cases: { algorithm: unknown; max_staleness: number; train: Record<string, unknown> }[] };

describe('trainConfigFromRecipe', () => {
  test('returns each objective key the trainer reads, as the shared fixture records it', () => {
    expect(FIXTURE.cases.map((c) => objectiveKeys(c.algorithm, c.max_staleness))).toStrictEqual(
      FIXTURE.cases.map((c) => c.train),
    );
    // the cases cover every policy loss, each mismatch mode and level, and both ways of counting masked tokens
    const trains = FIXTURE.cases.map((c) => c.train);
    expect(new Set(trains.map((t) => t.policy_loss))).toStrictEqual(new Set(['ppo', 'gspo', 'cispo', 'reinforce']));
    const mismatches = trains.map(
      (t) => t.mismatch as { mode: string; level: string; masked_tokens: string; trust_region: boolean } | null,
    );
    expect(new Set(mismatches.map((m) => m && `${m.mode}/${m.level}`))).toStrictEqual(
      new Set([null, 'tis/token', 'tis/sequence', 'mask/token', 'mask/sequence', 'reject/geometric']),
    );
    expect(new Set(mismatches.map((m) => m && `${m.masked_tokens}/${m.trust_region}`))).toStrictEqual(
      new Set([null, 'count/true', 'count/false', 'drop/true']),
    );
  });

  test('returns a recipe clip or aggregation over the preset, and cross-entropy presets as the sft loss', () => {
    expect(objectiveKeys({ name: 'gspo', clip_high: 1e-3, loss_aggregation: 'token-mean' })).toMatchObject({
      clip_low: 3e-4,
      clip_high: 1e-3,
      loss_aggregation: 'token-mean',
    });
    expect(objectiveKeys({ name: 'filtered_sft' })).toMatchObject({ loss: 'sft', policy_loss: 'ppo' });
  });
});
