/**
 * `rollout.workers` end to end through the built CLI with the real trainer and embedded engine: the
 * smoke quickstart run on two rollout workers samples the same tokens, with the same policy versions
 * and rewards, as on the run's own thread. Logprobs are compared loosely: the embedded engine batches
 * requests as they arrive, and a different batch changes the float sums in the last digits. Step 1 is
 * compared token for token; step 2 samples from weights trained on those logprobs, so only its shape is.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TokenTrajectory } from '../../src/tokens/index.js';
import { atkRun, onlyRun, readJsonl, tempRunsDir } from './run-helpers.js';

interface Episode {
  readonly key: string;
  readonly reward: number;
  readonly ids: readonly number[];
  readonly segments: string;
  readonly logprobs: readonly number[];
}

async function episodes(workers: number): Promise<{ dir: string; steps: Episode[][] }> {
  const runsDir = tempRunsDir();
  const result = await atkRun(['recipes/smoke/quickstart.yaml', `rollout.workers=${workers}`], runsDir);
  expect(result.stderr).toBe('');
  expect(result.exitCode).toBe(0);
  const dir = onlyRun(runsDir, 'smoke-quickstart');
  const steps = [1, 2].map((step) =>
    readJsonl(join(dir, 'trajectories', `step-0000${step}.jsonl`))
      .map((record) => {
        const trajectory = TokenTrajectory.fromJSON(record.trajectory);
        return {
          key: `${record.group}-${record.sample}`,
          reward: record.reward as number,
          ids: trajectory.ids,
          segments: JSON.stringify(trajectory.segments),
          logprobs: trajectory.modelLogprobs,
        };
      })
      .sort((a, b) => a.key.localeCompare(b.key)),
  );
  return { dir, steps };
}

describe('rollout workers in a run', () => {
  it('returns the episodes the run thread returns', async () => {
    const [here, pooled] = [await episodes(0), await episodes(2)];
    expect(readFileSync(join(pooled.dir, 'resolved.yaml'), 'utf8')).toMatch(/\n {2}workers: 2\n/);
    const [expected, got] = [here.steps[0]!, pooled.steps[0]!];
    expect(got.map(({ logprobs: _, ...rest }) => rest)).toStrictEqual(expected.map(({ logprobs: _, ...rest }) => rest));
    for (const [i, episode] of got.entries())
      for (const [k, logprob] of episode.logprobs.entries())
        expect(Math.abs(logprob - expected[i]!.logprobs[k]!)).toBeLessThan(1e-3);
    expect(pooled.steps[1]!.map((e) => e.key)).toStrictEqual(here.steps[1]!.map((e) => e.key));
  }, 300_000);
});
