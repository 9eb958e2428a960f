import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { AtkError, InputError, ProviderError } from '../errors/index.js';
import { findTorchPython } from '../trainer/index.js';
import { atkCacheDir, projectRoot } from '../util/paths.js';

/** What `ggufPython` prints and runs; stand-ins in tests. */
export interface GgufPythonOptions {
  readonly print: (line: string) => void;
  /** The recipe's or caller's trainer Python, first among the candidates. */
  readonly trainerPython?: string;
  readonly env?: NodeJS.ProcessEnv;
}

/** The pinned requirements file of the importer's venv. */
export function ggufRequirementsPath(): string {
  return join(projectRoot(), 'trainer', 'requirements-gguf.txt');
}

/** Where the importer's venv lives: $ATK_GGUF_VENV, else <cache>/atk/venv-gguf ($XDG_CACHE_HOME or ~/.cache). */
export function ggufVenvDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.ATK_GGUF_VENV) return env.ATK_GGUF_VENV;
  return join(atkCacheDir(env), 'venv-gguf');
}

// The trainer Python's site directories, one a line, for a .pth file: the venv then imports its torch and numpy.
const SITE_DIRS =
  "import site, sysconfig; p = sysconfig.get_paths(); print('\\n'.join(dict.fromkeys(site.getsitepackages() + [p['purelib'], p['platlib']])))";
const PIP_OFFLINE =
  /Could not find a version|NewConnectionError|Temporary failure in name resolution|Network is unreachable|ConnectTimeout|ProxyError|No matching distribution/;

/**
 * A Python that imports both the trainer's torch and PyPI's `gguf` (pinned in trainer/requirements-gguf.txt),
 * which `atk model import` runs the importer with. The first call makes a venv from the trainer's Python,
 * adds the trainer Python's site directories to it through a .pth file (so torch and numpy are the
 * trainer's, whatever installed them) and pip-installs the pins, saying so in one line; later calls reuse
 * it until the pins or the trainer Python change.
 * @throws InputError when no Python with torch is found; ProviderError when pip cannot reach the index.
 */
export async function ggufPython(options: GgufPythonOptions): Promise<string> {
  const env = options.env ?? process.env;
  const venv = ggufVenvDir(env);
  const python = join(venv, 'bin', 'python');
  const { python: trainer, tried } = await findTorchPython(options.trainerPython);
  if (!trainer)
    throw new InputError(`atk model import needs the trainer's Python with torch (tried ${tried.join('; ')})`, {
      hint: 'run `atk setup --yes`',
    });
  const requirements = readFileSync(ggufRequirementsPath(), 'utf8');
  const stampText = `${requirements}# trainer python: ${trainer}\n`;
  const stamp = join(venv, 'atk-requirements.txt');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === stampText) return python;
  const pins = requirements
    .split('\n')
    .filter((line) => line.trim() && !line.startsWith('#'))
    .join(' ');
  options.print(`installing ${pins} into ${venv} (once; it uses ${trainer}'s torch and numpy)`);
  await mkdir(venv, { recursive: true });
  await step(trainer, ['-m', 'venv', '--clear', venv], 'python3-venv is missing: run `atk setup --yes`');
  const sites = await step(trainer, ['-c', SITE_DIRS]);
  const purelib = (await step(python, ['-c', "import sysconfig; print(sysconfig.get_paths()['purelib'])"])).trim();
  await writeFile(join(purelib, 'atk-trainer-python.pth'), sites.endsWith('\n') ? sites : `${sites}\n`);
  const pip = await execa(
    python,
    ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '-r', ggufRequirementsPath()],
    { reject: false, env: { ...env, PIP_REQUIRE_VIRTUALENV: '1' } },
  );
  if (pip.exitCode !== 0) {
    const stderr = String(pip.stderr);
    if (PIP_OFFLINE.test(stderr))
      throw new ProviderError(`cannot install ${pins}: the package index is not reachable`, {
        hint: 'check the network, or set PIP_INDEX_URL to a mirror',
      });
    throw new AtkError('E_SETUP', `pip install ${pins} into ${venv} failed: ${lastLine(stderr)}`, 1);
  }
  await writeFile(stamp, stampText);
  return python;
}

async function step(file: string, args: readonly string[], hint?: string): Promise<string> {
  const result = await execa(file, args, { reject: false });
  if (result.exitCode !== 0)
    throw new AtkError('E_SETUP', `${file} ${args.join(' ')} failed: ${lastLine(String(result.stderr))}`, 1, {
      ...(hint ? { hint } : {}),
    });
  return String(result.stdout);
}

function lastLine(text: string): string {
  return (
    text
      .trim()
      .split('\n')
      .filter((l) => l.trim())
      .pop() ?? '(no output)'
  );
}
