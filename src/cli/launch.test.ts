import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { shellQuote } from '../util/shell-quote.js';
import { ConfigError } from '../errors/index.js';
import { projectRoot } from '../util/paths.js';
import { runLaunchSlurm } from './launch.js';

const slurmRecipe = join(projectRoot(), 'recipes', 'gsm8k-grpo-slurm.yaml');

describe('runLaunchSlurm', () => {
  test("returns the path of an sbatch script asking for the recipe's three nodes and GPUs and running atk run with the overrides", async () => {
    const runs = mkdtempSync(join(tmpdir(), 'atk-launch-'));
    const printed = await runLaunchSlurm({
      recipe: slurmRecipe,
      overrides: [`output.runs_dir=${runs}`],
      time: '1:00:00',
      partition: 'gpu',
      dryRun: true,
    });
    const script = readFileSync(/wrote (\S+)/.exec(printed)![1]!, 'utf8').split('\n');
    expect(script.filter((l) => l.startsWith('#SBATCH'))).toStrictEqual([
      '#SBATCH --job-name=atk-gsm8k-grpo-slurm',
      '#SBATCH --nodes=3',
      '#SBATCH --ntasks-per-node=1',
      `#SBATCH --output=${join(runs, 'gsm8k-grpo-slurm', 'slurm', 'slurm-%j.out')}`,
      '#SBATCH --time=1:00:00',
      '#SBATCH --partition=gpu',
      '#SBATCH --gpus-per-node=1',
    ]);
    // Words are shell-quoted where they need it (a clone at a path with a space).
    expect(
      script
        .find((l) => l.startsWith('exec '))
        ?.endsWith(` run ${shellQuote(slurmRecipe)} ${shellQuote(`output.runs_dir=${runs}`)}`),
    ).toBe(true);
    rmSync(runs, { recursive: true, force: true });
  });

  test('rejects a local recipe and fewer nodes than the recipe places', async () => {
    await expect(
      runLaunchSlurm({ recipe: join(projectRoot(), 'recipes', 'gsm8k-grpo.yaml'), overrides: [], dryRun: true }),
    ).rejects.toThrow(/cluster\.launcher: is local; atk launch slurm needs slurm/);
    const error = await runLaunchSlurm({ recipe: slurmRecipe, overrides: [], nodes: 2, dryRun: true }).catch(
      (e: unknown) => e,
    );
    expect([error instanceof ConfigError, (error as Error).message]).toStrictEqual([
      true,
      expect.stringContaining('--nodes 2: the recipe needs 3 (trainer 1, engines 2)'),
    ]);
  });
});
