import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot, venvDir } from '../util/paths.js';
import { aptInstall, canApt, DEV_PACKAGES, type MachineFacts, type SetupCommand, type SetupPlan } from './plan.js';

/** What `atk setup --gpu` needs to know beyond `MachineFacts` (injected in tests). */
export interface GpuMachineFacts extends MachineFacts {
  /** torch in atk's venv: its version and the CUDA version it was built for (null: a CPU build); null when the venv has no torch. */
  readonly venvTorch: { readonly version: string; readonly cuda: string | null } | null;
  /** The requirements atk's venv was last installed from (`VENV_STAMPS`' files); null where there is none. */
  readonly venvStamps: { readonly gpu: string | null; readonly dev: string | null };
  /** `python3 --version`'s number, e.g. "3.11.2"; null when there is no python3. */
  readonly python3Version: string | null;
  /** `process.platform`-`process.arch`, e.g. "linux-x64". */
  readonly platform: string;
}

/** Copies of the requirements files in atk's venv, written after pip installed them: the venv is current while they match. */
export const VENV_STAMPS = { gpu: 'atk-requirements-gpu.txt', dev: 'atk-requirements-dev.txt' } as const;

/** The trainer's GPU requirements (a CUDA build of torch), pinned; shipped with the trainer. */
export function gpuRequirementsFile(): string {
  return join(projectRoot(), 'trainer', 'requirements-gpu.txt');
}

/** What `--gpu --dev` adds to the venv: the trainer's test runner, linter and formatter, at the versions the tree is checked with. */
export function gpuDevRequirementsFile(): string {
  return join(projectRoot(), 'trainer', 'requirements-dev.txt');
}

/** Debian packages `--gpu` still takes from apt: the code sandbox and `python3 -m venv` (torch comes from PyPI instead). */
export const GPU_APT_PACKAGES = ['bubblewrap', 'python3-venv'] as const;
/** torch 2.15 (requirements-gpu.txt) is built for Python 3.11 and later. */
const MIN_PYTHON: readonly [number, number] = [3, 11];

/**
 * The commands that give this machine a CUDA build of torch in atk's venv (`~/.cache/atk/venv`, which the
 * trainer prefers to the system's Pythons): on Debian/Ubuntu with apt, the missing packages of
 * `GPU_APT_PACKAGES` (and with `dev` the test tools that are not Python packages); then, unless the venv
 * already has a CUDA torch and was installed from the requirements as they are now, `python3 -m venv`,
 * `pip install -r trainer/requirements-gpu.txt` from PyPI (whose Linux torch wheels are CUDA builds), with
 * `dev` also `-r trainer/requirements-dev.txt`, and copies of the requirements into the venv as its stamps.
 * A CPU torch already in the venv is replaced (pip would otherwise take `2.15.0+cpu` as satisfying
 * `torch==2.15.0`).
 */
export function gpuSetupPlan(
  facts: GpuMachineFacts,
  options: {
    readonly dev?: boolean;
    readonly venv?: string;
    readonly requirements?: string;
    readonly devRequirements?: string;
  } = {},
): SetupPlan {
  const commands: SetupCommand[] = [];
  const notes: string[] = [];
  if (!facts.platform.startsWith('linux-'))
    notes.push(`PyPI has CUDA builds of torch for Linux only; on ${facts.platform} the venv gets a CPU torch`);
  if (facts.python3Version === null) notes.push('no python3 on PATH: install Python >= 3.11 first');
  else if (olderThan(facts.python3Version, MIN_PYTHON))
    notes.push(
      `python3 is ${facts.python3Version}; the pinned torch needs Python >= ${MIN_PYTHON.join('.')} (put a newer python3 first on PATH)`,
    );
  const apt = canApt(facts);
  // The Python test tools go into the venv with pip (npm test runs them under the trainer's Python).
  const devApt = DEV_PACKAGES.filter((p) => !['python3-pytest', 'flake8', 'black'].includes(p));
  const wantedApt = [...GPU_APT_PACKAGES, ...(options.dev ? devApt : [])];
  const missingApt = wantedApt.filter((p) => !facts.installedPackages.has(p));
  if (apt && missingApt.length > 0) {
    commands.push(...aptInstall(facts, missingApt));
  } else if (!apt && !facts.onPath.has('bwrap')) {
    notes.push(
      'bubblewrap (bwrap) runs the code sandbox of run_python and code_tests: install it with your package manager',
    );
  }
  const venv = options.venv ?? venvDir();
  const files = {
    gpu: options.requirements ?? gpuRequirementsFile(),
    dev: options.devRequirements ?? gpuDevRequirementsFile(),
  };
  const current = (kind: 'gpu' | 'dev'): boolean => facts.venvStamps[kind] === readFileSync(files[kind], 'utf8');
  const cudaTorch = facts.venvTorch?.cuda != null;
  const wanted = options.dev ? (['gpu', 'dev'] as const) : (['gpu'] as const);
  if (cudaTorch && wanted.every(current)) return { route: commands.length ? 'apt' : 'none', commands, notes };
  if (facts.venvTorch === null) commands.push(['python3', '-m', 'venv', venv]);
  const replace = facts.venvTorch !== null && !cudaTorch ? ['--force-reinstall'] : [];
  commands.push([join(venv, 'bin', 'pip'), 'install', ...replace, ...wanted.flatMap((kind) => ['-r', files[kind]])]);
  for (const kind of wanted) commands.push(['cp', files[kind], join(venv, VENV_STAMPS[kind])]);
  return { route: 'gpu', commands, notes };
}

function olderThan(version: string, [major, minor]: readonly [number, number]): boolean {
  const [a = 0, b = 0] = version.split('.').map(Number);
  return a < major || (a === major && b < minor);
}
