import { builtinChatTemplate } from '../tokens/index.js';
import { paint, renderTable, type TableStyle } from '../ui/table.js';
import { defineCommand } from './define-command.js';
import { doctorChecks, type DoctorRow, type DoctorStatus } from './doctor-checks.js';
import { modelDoctorRows } from './doctor-model.js';
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
  command: 'doctor [model]',
  describe:
    "Check this machine (Node, Python and its torch build, OpenBLAS, GPUs and which GPU recipes fit them, vllm/sglang, bubblewrap, data directory), or a model directory's tool calling",
  positionals: {
    model: {
      type: 'string',
      describe:
        'A local Hugging Face model directory: render a sample tool call and result through its chat template, parse the call back, check the history is append-only',
    },
  },
  options: {
    'tool-call-format': {
      type: 'string',
      default: 'auto',
      describe: 'With a model: the agent.tool_call_format to check (auto reads it off the chat template)',
    },
    'chat-template': {
      type: 'string',
      describe:
        "With a model: a Jinja file to use instead of the model's chat template, or chatml-tools (as model.chat_template)",
    },
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
    [
      '$0 doctor ~/models/Llama-3.1-8B-Instruct',
      "a model's tool-call format, a sample call parsed back, whether its history stays append-only",
    ],
  ],
  handler: async (args) => {
    if (args.model !== undefined) {
      const rows = await modelDoctorRows({
        model: args.model,
        format: args['tool-call-format'],
        ...(args['chat-template'] === undefined
          ? {}
          : { chatTemplate: builtinChatTemplate(args['chat-template']) ?? args['chat-template'] }),
      });
      const report = await runDoctor({}, rows);
      process.stdout.write(report.text);
      if (report.failed) process.exitCode = 1;
      return;
    }
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
