import { rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { findRun } from '../runs/index.js';
import { scalarsOf, TensorBoardWriter } from '../trackers/index.js';
import { defineCommand } from './define-command.js';
import { runPositional, runsDirOption } from './run-options.js';

export interface RunsExportOptions {
  readonly run: string;
  readonly to: 'tensorboard';
  /** Directory for the event files (default `<run>/tb`). */
  readonly out?: string;
  readonly runsDir: string;
}

/**
 * `atk runs export <run> --to tensorboard`: write a run's metrics.jsonl as TensorBoard event files,
 * replacing earlier exports' files there so every scalar appears once. Returns the directory and
 * the number of steps written.
 * @throws InputError naming the nearest run when `run` matches none.
 */
export async function runRunsExport(
  options: RunsExportOptions,
): Promise<{ readonly dir: string; readonly lines: number }> {
  const run = await findRun(options.run, options.runsDir);
  const dir = resolve(options.out ?? join(run.dir, 'tb'));
  const metrics = await run.readMetrics();
  await rm(dir, { recursive: true, force: true });
  const writer = new TensorBoardWriter(dir);
  let lines = 0;
  try {
    for (const line of metrics) {
      const scalars = scalarsOf(line);
      if (!scalars) continue;
      writer.write(scalars);
      lines++;
    }
  } finally {
    writer.close();
  }
  return { dir, lines };
}

/** `atk runs export`. */
export const runsExportCommand = defineCommand({
  command: 'export <run>',
  describe: "Write a run's metrics for another tool (TensorBoard event files)",
  positionals: { run: runPositional },
  options: {
    to: { choices: ['tensorboard'] as const, demandOption: true, describe: 'Format to write' },
    out: { type: 'string', describe: 'Directory for the event files (default <run>/tb)' },
    'runs-dir': runsDirOption,
  },
  examples: [['$0 runs export quickstart --to tensorboard', 'then: tensorboard --logdir runs/quickstart/v001/tb']],
  handler: async (args) => {
    const { dir, lines } = await runRunsExport({
      run: args.run,
      to: args.to,
      runsDir: args['runs-dir'],
      ...(args.out === undefined ? {} : { out: args.out }),
    });
    process.stdout.write(`${lines} metrics lines -> ${dir}\ntensorboard --logdir ${dir}\n`);
  },
});
