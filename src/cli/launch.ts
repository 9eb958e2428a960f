import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { placementDemand } from '../cluster/placement.js';
import { sbatchScript, submitSbatch } from '../cluster/sbatch.js';
import { ConfigError } from '../errors/index.js';
import { loadRecipe } from '../recipe/index.js';
import { defineCommand } from './define-command.js';

/** Options of `atk launch slurm`. */
export interface LaunchSlurmOptions {
  readonly recipe: string;
  readonly overrides: readonly string[];
  /** Nodes to allocate; default: what the recipe's placement needs. */
  readonly nodes?: number;
  readonly time?: string;
  readonly partition?: string;
  /** Write the script and print it, without submitting. */
  readonly dryRun: boolean;
}

/**
 * `atk launch slurm`: validate the recipe, write an sbatch script running `atk run` with the same
 * recipe and overrides under `<runs_dir>/<name>/slurm/`, and submit it. Returns what to print.
 * @throws ConfigError for a recipe that is not cluster.launcher slurm or asks for more nodes than given;
 * ProviderError when sbatch refuses the job.
 */
export async function runLaunchSlurm(options: LaunchSlurmOptions): Promise<string> {
  const { recipe, file } = await loadRecipe(options.recipe, options.overrides);
  const refuse = (path: string, message: string): ConfigError =>
    new ConfigError([{ file, line: 0, col: 0, path, message }], {
      hint: 'atk launch slurm runs a recipe whose cluster.launcher is slurm',
    });
  if (recipe.cluster.launcher !== 'slurm')
    throw refuse(
      'cluster.launcher',
      `is ${recipe.cluster.launcher}; atk launch slurm needs slurm (override: cluster.launcher=slurm)`,
    );
  const demand = placementDemand(recipe);
  const needed = demand.trainerNodes + demand.engineNodes;
  const nodes = options.nodes ?? needed;
  if (nodes < needed)
    throw refuse(
      'cluster.launcher',
      `--nodes ${nodes}: the recipe needs ${needed} (trainer ${demand.trainerNodes}, engines ${demand.engineNodes})`,
    );
  const dir = resolve(recipe.output.runs_dir, recipe.name, 'slurm');
  mkdirSync(dir, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const script = join(dir, `atk-run-${stamp}.sbatch`);
  const gpus = Math.max(recipe.model.trainer.gpus.length, demand.engineGpusPerNode ?? 0);
  // The same node and atk entry this process runs (execArgv keeps a loader such as tsx).
  const atk = [process.execPath, ...process.execArgv, process.argv[1] ?? 'atk'];
  writeFileSync(
    script,
    sbatchScript({
      jobName: `atk-${recipe.name}`,
      nodes,
      ...(options.time ? { time: options.time } : {}),
      ...(options.partition ? { partition: options.partition } : {}),
      ...(gpus ? { gpusPerNode: gpus } : {}),
      output: join(dir, 'slurm-%j.out'),
      cwd: process.cwd(),
      command: [...atk, 'run', resolve(options.recipe), ...options.overrides],
    }),
    { mode: 0o755 },
  );
  if (options.dryRun) return `wrote ${script} (not submitted)\n`;
  const jobId = await submitSbatch(script);
  return `submitted slurm job ${jobId}: ${script}\n  output: ${join(dir, `slurm-${jobId}.out`)}\n`;
}

export const launchCommand = defineCommand({
  command: 'launch <launcher> <recipe> [overrides..]',
  describe: 'Submit a recipe as a cluster job (slurm: an sbatch script running atk run on the first node)',
  positionals: {
    launcher: { type: 'string', choices: ['slurm'], demandOption: true, describe: 'Cluster scheduler' },
    recipe: {
      type: 'string',
      demandOption: true,
      describe: 'Recipe YAML file (cluster.launcher: slurm)',
    },
    overrides: {
      type: 'string',
      array: true,
      describe: 'key.path=value overrides, passed on to atk run',
    },
  },
  options: {
    nodes: {
      type: 'number',
      describe: 'Nodes to allocate; default: what the recipe places (trainer + engine nodes)',
    },
    time: { type: 'string', describe: 'sbatch --time, e.g. 12:00:00' },
    partition: { type: 'string', describe: 'sbatch --partition' },
    'dry-run': { type: 'boolean', default: false, describe: 'Write the sbatch script without submitting it' },
  },
  examples: [
    ['$0 launch slurm recipes/gsm8k-grpo-slurm.yaml --time 12:00:00 --partition gpu', 'submit the recipe on 3 nodes'],
  ],
  handler: async (args) => {
    process.stdout.write(
      await runLaunchSlurm({
        recipe: args.recipe,
        overrides: args.overrides ?? [],
        ...(args.nodes === undefined ? {} : { nodes: args.nodes }),
        ...(args.time ? { time: args.time } : {}),
        ...(args.partition ? { partition: args.partition } : {}),
        dryRun: args['dry-run'],
      }),
    );
  },
});
