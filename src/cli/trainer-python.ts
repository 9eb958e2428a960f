import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { InputError } from '../errors/index.js';
import { findTorchPython } from '../trainer/find-python.js';
import { venvDir } from '../util/paths.js';
import { runSetup, type SetupOptions } from './setup.js';

/** How `atk run` may offer `atk setup` when the trainer's Python is missing. */
export interface TrainerPythonOptions {
  /** Whether someone can answer a question (a TTY, not CI). */
  readonly interactive: boolean;
  readonly ask: (question: string) => Promise<boolean>;
  readonly print: (line: string) => void;
  /** Stand-ins for the setup command's machine facts and runner (tests). */
  readonly setup?: Pick<SetupOptions, 'facts' | 'run'>;
  /** The file whose presence means the offer was already made once; default beside the setup venv. */
  readonly askedMarker?: string;
}

const NOT_FOUND = 'the trainer needs a Python that can import torch and none was found';

/**
 * Before a run creates anything: find the trainer's Python (the recipe's `model.trainer.python`
 * among the candidates). When none has torch installed, the first run on a terminal offers `atk setup`
 * once (printing its commands, asking before it runs them); every other run, and any run nobody can
 * answer (CI, a pipe), stops with one line naming `atk setup --yes`, installing nothing.
 * @throws InputError when no Python with torch is found and none was installed.
 */
export async function ensureTrainerPython(
  recipePython: string | undefined,
  options: TrainerPythonOptions,
): Promise<void> {
  if ((await findTorchPython(recipePython)).python) return;
  const marker = options.askedMarker ?? join(dirname(venvDir()), 'setup-offered');
  if (!options.interactive || existsSync(marker))
    throw new InputError(`${NOT_FOUND}; run \`atk setup --yes\` to install it (atk run installs nothing itself)`);
  await mkdir(dirname(marker), { recursive: true });
  await writeFile(marker, `${new Date().toISOString()}\n`);
  options.print(`atk run: ${NOT_FOUND}.`);
  await runSetup({
    dryRun: false,
    yes: false,
    dev: false,
    interactive: true,
    ask: options.ask,
    print: options.print,
    ...options.setup,
  }).catch((error: unknown) => {
    throw error instanceof InputError
      ? new InputError(`${NOT_FOUND}; nothing installed: run \`atk setup --yes\` when you want it`)
      : error;
  });
  const { python, tried } = await findTorchPython(recipePython);
  if (!python)
    throw new InputError(`${NOT_FOUND} after atk setup (tried ${tried.join('; ')}); atk doctor shows what is missing`);
}
