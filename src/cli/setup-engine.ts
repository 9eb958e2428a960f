import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { AtkError, InputError } from '../errors/index.js';
import { commandLine, type SetupCommand } from '../setup/plan.js';
import {
  describeStep,
  probeVllmMachine,
  vllmSetupPlan,
  type VllmMachineFacts,
  type VllmSetupPlan,
  type VllmSetupStep,
} from '../setup/vllm.js';

/** The engines `atk setup --engine` installs. */
export const SETUP_ENGINES = ['vllm'] as const;

/** How a setup asks before it installs: the shared part of SetupOptions. */
export interface ConfirmOptions {
  readonly yes: boolean;
  /** Whether someone can answer a question (a TTY, not CI). */
  readonly interactive: boolean;
  readonly ask?: (question: string) => Promise<boolean>;
}

export interface EngineSetupOptions extends ConfirmOptions {
  readonly engine: (typeof SETUP_ENGINES)[number];
  readonly dryRun: boolean;
  readonly print: (line: string) => void;
  readonly facts?: VllmMachineFacts;
  /** Where the venv goes; default engines/launch/vllm-venv.ts's. */
  readonly venv?: string;
  readonly run?: (command: SetupCommand) => Promise<void>;
}

/**
 * `atk setup --engine vllm`: puts vLLM into atk's own venv (src/setup/vllm.ts), printing every step
 * before it runs; nothing when the venv already holds the same install. Returns the plan.
 * @throws InputError when it would install without --yes non-interactively, the user declines, or
 * python3 cannot make the venv; SetupOfflineError when the package index is unreachable; AtkError
 * (exit 1) naming the command that failed.
 */
export async function runEngineSetup(options: EngineSetupOptions): Promise<VllmSetupPlan> {
  const plan = vllmSetupPlan(options.facts ?? (await probeVllmMachine(options.venv)), options.venv);
  const what = `vLLM ${plan.install.version} (${plan.install.package}${plan.install.torch ? ` with ${plan.install.torch}` : ''})`;
  if (plan.steps.length === 0) {
    options.print(`atk setup: ${what} is already in ${plan.venv}; atk doctor shows it`);
    return plan;
  }
  options.print(`atk setup ${options.dryRun ? 'would install' : 'installs'} ${what} into ${plan.venv}:`);
  for (const step of plan.steps) options.print(`  ${describeStep(step, commandLine)}`);
  if (options.dryRun) return plan;
  await confirmInstall(options);
  const run = options.run ?? runReportingOffline;
  for (const step of plan.steps) {
    options.print(`$ ${describeStep(step, commandLine)}`);
    await runStep(step, run);
  }
  options.print(`atk setup: done; model.engine.kind vllm starts ${join(plan.venv, 'bin', 'vllm')}`);
  return plan;
}

/**
 * Returns once installing may go ahead: at once with `yes`, else after a yes on the terminal.
 * @throws InputError where no one can answer (CI, a pipe) or the user declines.
 */
export async function confirmInstall(options: ConfirmOptions): Promise<void> {
  if (options.yes) return;
  if (!options.interactive || !options.ask) {
    throw new InputError('atk setup installs nothing without --yes when no one can answer (CI, a pipe)', {
      hint: 'atk setup --yes, or atk setup --dry-run to see the commands',
    });
  }
  if (!(await options.ask('Run these commands? [y/N] ')))
    throw new InputError('atk setup: nothing installed (declined)');
}

/** pip could not reach the package index: `atk setup` cannot install anything here, and says so in one line. */
export class SetupOfflineError extends AtkError {
  constructor(command: SetupCommand) {
    super(
      'E_SETUP_OFFLINE',
      `atk setup: the package index is not reachable (\`${commandLine(command)}\` found nothing to download)`,
      1,
      {
        hint: 'run it where PyPI is reachable, or point pip at a mirror (PIP_INDEX_URL)',
      },
    );
  }
}

async function runStep(step: VllmSetupStep, run: (command: SetupCommand) => Promise<void>): Promise<void> {
  if (step.kind === 'run') return run(step.command);
  mkdirSync(step.dir, { recursive: true });
  for (const [name, text] of Object.entries(step.files)) writeFileSync(join(step.dir, name), text());
}

/**
 * What pip prints when it cannot reach the index: the connection errors of its retries, and with no
 * retries left only "(from versions: none)", which PyPI never answers for the pinned packages.
 */
const OFFLINE =
  /NewConnectionError|Temporary failure in name resolution|Network is unreachable|ConnectTimeout|ProxyError|\(from versions: none\)/;

/** Runs a command on the terminal, keeping its stderr to tell an unreachable index from other failures. */
async function runReportingOffline(command: SetupCommand): Promise<void> {
  const [file, ...args] = command;
  const result = await execa(file, args, {
    stdin: 'inherit',
    stdout: 'inherit',
    stderr: ['pipe', 'inherit'],
    reject: false,
  });
  if (result.exitCode === 0) return;
  if (OFFLINE.test(String(result.stderr))) throw new SetupOfflineError(command);
  throw new AtkError(
    'E_SETUP',
    `atk setup: \`${commandLine(command)}\` failed (exit ${result.exitCode ?? result.signal})`,
    1,
    {
      hint: 'fix what it printed and run atk setup --engine vllm again',
    },
  );
}
