import { join, resolve } from 'node:path';
import { findRun, writeFileAtomic } from '../runs/index.js';
import { buildReportHtml } from '../ui/report/build-report.js';
import { readRunReportData } from '../ui/report/run-data.js';
import { defineCommand } from './define-command.js';
import { viewHint } from './view.js';
import { runPositional, runsDirOption } from './run-options.js';

export interface ReportOptions {
  readonly run: string;
  /** HTML file to write; default `<run-dir>/report.html`. */
  readonly out?: string;
  readonly runsDir?: string;
}

export const reportCommand = defineCommand({
  command: 'report <run>',
  describe: 'Write one self-contained HTML report of a run: curves, evals before/after, tool use, sample trajectories',
  positionals: { run: runPositional },
  options: {
    out: { type: 'string', describe: 'HTML file to write (default: <run-dir>/report.html)' },
    'runs-dir': runsDirOption,
  },
  examples: [
    ['$0 report runs/quickstart/v001', 'write runs/quickstart/v001/report.html'],
    ['$0 report quickstart --out quickstart.html', 'the newest quickstart run, to a file of your choice'],
  ],
  handler: async (argv) => {
    const file = await runReport({
      run: argv.run,
      ...(argv.out ? { out: argv.out } : {}),
      ...(argv.runsDir ? { runsDir: argv.runsDir } : {}),
    });
    const run = await findRun(argv.run, argv.runsDir ?? 'runs');
    process.stdout.write(`report written to ${file}\n${viewHint(run.dir, 'curves?runs={run}')}\n`);
  },
});

/**
 * `atk report`: read the run and write the HTML file (atomically). Returns its path.
 * @throws InputError when the run cannot be found.
 */
export async function runReport(options: ReportOptions): Promise<string> {
  const run = await findRun(options.run, options.runsDir ?? 'runs');
  const html = buildReportHtml(await readRunReportData(run.dir));
  const file = resolve(options.out ?? join(run.dir, 'report.html'));
  await writeFileAtomic(file, html);
  return file;
}
