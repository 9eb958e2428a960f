import type { Argv, CommandModule } from 'yargs';
import { paint, renderTable, type TableStyle } from '../ui/table.js';
import { doctorChecks, type DoctorRow, type DoctorStatus } from './doctor-checks.js';

/** What `atk doctor` found: the rows, the table text, and whether any row failed. */
export interface DoctorReport {
  readonly rows: readonly DoctorRow[];
  readonly text: string;
  readonly failed: boolean;
}

const COLORS: Readonly<Record<DoctorStatus, 'green' | 'yellow' | 'red'>> = { pass: 'green', warn: 'yellow', fail: 'red' };

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
  const counts = (['pass', 'warn', 'fail'] as const).map((s) => `${found.filter((r) => r.status === s).length} ${s}`).join(', ');
  return { rows: found, text: `${table}\n${counts}\n`, failed };
}

export const doctorCommand: CommandModule<object, object> = {
  command: 'doctor',
  describe: 'Check this machine: Node, Python + torch, OpenBLAS, GPUs, vllm/sglang, bubblewrap, data directory',
  builder: (yargs: Argv) =>
    yargs.example('$0 doctor', 'pass/warn/fail per check, with how to fix each problem; exit code 1 only when a check fails'),
  handler: async () => {
    const report = await runDoctor();
    process.stdout.write(report.text);
    if (report.failed) process.exitCode = 1;
  },
};
