/**
 * The CI smoke recipes, end to end through the built CLI with the real trainer and embedded
 * engine: each must leave a complete run directory.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TokenTrajectory } from '../../src/tokens/index.js';
import { execa } from 'execa';
import { atkRun, BIN, loadCheckpoint, onlyRun, readJson, readJsonl, tempRunsDir } from './run-helpers.js';

const SMOKES = [
  { recipe: 'recipes/smoke/quickstart.yaml', name: 'smoke-quickstart', steps: 2 },
  { recipe: 'recipes/smoke/gsm8k.yaml', name: 'smoke-gsm8k', steps: 1 },
  { recipe: 'recipes/smoke/deepcoder.yaml', name: 'smoke-deepcoder', steps: 1 },
  { recipe: 'recipes/smoke/tau2.yaml', name: 'smoke-tau2', steps: 1 },
];

describe('smoke recipes', () => {
  for (const smoke of SMOKES) {
    it(`returns a complete run directory for ${smoke.recipe}`, async () => {
      const runsDir = tempRunsDir();
      const result = await atkRun([smoke.recipe], runsDir);
      expect(result.stderr).toBe('');
      expect(result.exitCode).toBe(0);
      const dir = onlyRun(runsDir, smoke.name);

      expect(readJson(join(dir, 'manifest.json')).status).toBe('finished');
      for (const file of ['recipe.yaml', 'resolved.yaml', 'summary.json', 'logs/trainer.log']) expect(existsSync(join(dir, file))).toBe(true);

      const train = readJsonl(join(dir, 'metrics.jsonl')).filter((l) => l.kind === 'train');
      expect(train.map((l) => l.step)).toStrictEqual(Array.from({ length: smoke.steps }, (_, i) => i + 1));
      for (const line of train) expect(Number.isFinite(line.reward_mean)).toBe(true);

      for (let step = 1; step <= smoke.steps; step++) {
        const records = readJsonl(join(dir, 'trajectories', `step-${String(step).padStart(5, '0')}.jsonl`));
        expect(records.length).toBeGreaterThan(0);
        for (const record of records) {
          expect(Number.isFinite(record.reward)).toBe(true);
          const trajectory = TokenTrajectory.fromJSON(record.trajectory);
          const mask = trajectory.mask();
          const full = trajectory.logprobsFull();
          expect(trajectory.ids.length).toBeGreaterThan(0);
          expect(mask.some((m) => m === 1)).toBe(true);
          // logprobs exist exactly where the engine generated the token
          expect(full.map((l) => (l === null ? 0 : 1))).toStrictEqual(mask);
        }
      }

      const checkpoints = readdirSync(join(dir, 'checkpoints'));
      expect(checkpoints).toContain(`step-${String(smoke.steps).padStart(5, '0')}`);
      expect(await loadCheckpoint(join(dir, 'checkpoints', `step-${String(smoke.steps).padStart(5, '0')}`))).toBeGreaterThan(100_000);

      // The newest checkpoint exports as a loadable Hugging Face directory with the run's tokenizer.
      const out = join(runsDir, 'exported');
      const exported = await execa('node', [BIN, 'export', dir, out], { reject: false });
      expect(exported.exitCode).toBe(0);
      expect(readdirSync(out).sort()).toEqual(expect.arrayContaining(['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']));
      expect(await loadCheckpoint(out)).toBeGreaterThan(100_000);
    });
  }
});
