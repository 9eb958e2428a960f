/**
 * The objective smoke recipes (GSPO, CISPO with overlong shaping, mismatch masking), end to end through the
 * built CLI with the real trainer and embedded engine: each trains its two steps with its own loss and records
 * the metrics that loss makes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { atkRun, onlyRun, readJson, readJsonl, tempRunsDir } from './run-helpers.js';

const SMOKES = [
  { recipe: 'recipes/smoke/gspo.yaml', name: 'smoke-gspo', resolved: /name: gspo\n[\s\S]*clip_low: 0.0003\n/ },
  { recipe: 'recipes/smoke/cispo.yaml', name: 'smoke-cispo', resolved: /name: cispo\n[\s\S]*clip_high: 4\n/ },
  { recipe: 'recipes/smoke/mismatch-mask.yaml', name: 'smoke-mismatch-mask', resolved: /mode: mask\n/ },
] as const;

describe('objective smoke recipes', () => {
  for (const smoke of SMOKES) {
    it(`returns two trained steps for ${smoke.recipe}`, async () => {
      const runsDir = tempRunsDir();
      const result = await atkRun([smoke.recipe], runsDir);
      expect([result.exitCode, result.stderr]).toStrictEqual([0, '']);
      const dir = onlyRun(runsDir, smoke.name);
      expect(readJson(join(dir, 'manifest.json')).status).toBe('finished');
      expect(readFileSync(join(dir, 'resolved.yaml'), 'utf8')).toMatch(smoke.resolved);
      const train = readJsonl(join(dir, 'metrics.jsonl')).filter((l) => l.kind === 'train');
      expect(train.map((l) => l.step)).toStrictEqual([1, 2]);
      for (const line of train) {
        expect(Number.isFinite(line['train/loss'])).toBe(true);
        expect(Number.isFinite(line['train/clip_fraction'])).toBe(true);
      }
      if (smoke.name === 'smoke-gspo')
        for (const line of train) expect(line['train/tis_weight_mean']).toBeGreaterThan(0);
      if (smoke.name === 'smoke-mismatch-mask')
        for (const line of train) expect(line['train/mismatch_masked_fraction']).toBeGreaterThanOrEqual(0);
      if (smoke.name === 'smoke-cispo') {
        // every scored episode carries the overlong part, 0 or the ramp's value, and its reward includes it
        const records = readJsonl(join(dir, 'trajectories', 'step-00001.jsonl')) as {
          reward: number;
          reward_parts: Record<string, number>;
        }[];
        for (const r of records) {
          expect(r.reward_parts.overlong).toBeLessThanOrEqual(0);
          expect(r.reward_parts.overlong).toBeGreaterThanOrEqual(-1);
        }
      }
    });
  }
});
