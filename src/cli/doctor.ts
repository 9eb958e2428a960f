import { paint, renderTable, type TableStyle } from '../ui/table.js';
import { defineCommand } from './define-command.js';
import { doctorChecks, type DoctorRow, type DoctorStatus } from './doctor-checks.js';
import { SETUP_FLAGS, setupFromArgs } from './setup.js';

/** What `atk doctor` found: the rows, the table text, and whether any row failed. */
export interface DoctorReport {
  readonly rows: readonly DoctorRow[];
  readonly text: string;
  readonly failed: boolean;
}

const COLORS: Readonly<Record<DoctorStatus, 'green' | 'yellow' | 'red'>> = {
  pass: 'green',
  warn: 'yellow',
  fail: 'red',
};

/** `atk doctor`: check the machine; render a pass/warn/fail table with a fix on every other row. */
export async function runDoctor(style: TableStyle = {}, rows?: readonly DoctorRow[]): Promise<DoctorReport> {
  const found = rows ?? (await doctorChecks());
  const tty = style.tty ?? Boolean(process.stdout.isTTY);
  const table = renderTable(
    ['check', 'status', 'found', 'fix'],
    found.map((r) => [r.check, paint(r.status, COLORS[r.status], tty), r.detail, r.fix ?? '']),
    { tty },
  );
  const failed = found.some((r) => r.status === 'fail');
  const counts = (['pass', 'warn', 'fail'] as const)
    .map((s) => `${found.filter((r) => r.status === s).length} ${s}`)
    .join(', ');
  return { rows: found, text: `${table}\n${counts}\n`, failed };
}

export const doctorCommand = defineCommand({
  command: 'doctor',
  describe: 'Check this machine: Node, Python + torch, OpenBLAS, GPUs, vllm/sglang, bubblewrap, data directory',
  options: {
    fix: {
      type: 'boolean',
      default: false,
      describe: 'Then install what is missing, as atk setup does (with --yes, --dry-run, --dev)',
    },
    ...SETUP_FLAGS,
  },
  examples: [
    ['$0 doctor', 'pass/warn/fail per check, with how to fix each problem; exit code 1 only when a check fails'],
    ['$0 doctor --fix --yes', 'check, then install the missing Python side'],
  ],
  handler: async (args) => {
    const report = await runDoctor();
    process.stdout.write(report.text);
    if (args.fix) {
      await setupFromArgs(args);
      if (!args['dry-run']) {
        const after = await runDoctor();
        process.stdout.write(`\nafter atk setup:\n${after.text}`);
        process.exitCode = after.failed ? 1 : 0;
        return;
      }
    }
    if (report.failed) process.exitCode = 1;
  },
});
