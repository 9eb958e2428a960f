import { join } from 'node:path';
import { venvDir } from '../util/paths.js';
import { shellLine } from '../util/shell-quote.js';

/** What the machine has, as `atk setup` probes it (injected in tests). */
export interface MachineFacts {
  /** /etc/os-release's ID and ID_LIKE words, e.g. ['debian'] or ['ubuntu', 'debian']. */
  readonly osIds: readonly string[];
  readonly isRoot: boolean;
  /** Executables found on PATH among apt-get, sudo, python3, bwrap. */
  readonly onPath: ReadonlySet<string>;
  /** Debian packages already installed (of those asked about). */
  readonly installedPackages: ReadonlySet<string>;
  /** Whether a Python atk finds imports torch (the trainer's one requirement). */
  readonly torch: boolean;
  /** Whether that Python also imports pytest (the trainer's tests). */
  readonly pytest: boolean;
}

/** One command `atk setup` runs, shown before it runs. */
export type SetupCommand = readonly [string, ...string[]];

export interface SetupPlan {
  /**
   * `apt`: Debian/Ubuntu packages as root; `venv`: a private virtual environment with pip; `gpu`: a CUDA torch into
   * that venv (gpu-plan.ts); `none`: nothing missing.
   */
  readonly route: 'apt' | 'venv' | 'gpu' | 'none';
  readonly commands: readonly SetupCommand[];
  /** What setup cannot do on this route, said once (e.g. bubblewrap outside apt). */
  readonly notes: readonly string[];
}

/** Debian packages for running atk's jobs: CPU torch, a threaded BLAS, the code sandbox, venv (the GGUF importer's). */
export const RUNTIME_PACKAGES = ['python3-torch', 'libopenblas0-pthread', 'bubblewrap', 'python3-venv'] as const;
/** Added by `--dev` for the test suite: the trainer's pytest, linter (flake8) and formatter (black), a pseudo-terminal and a browser for the UI tests, a local Slurm cluster for the cluster tests. */
export const DEV_PACKAGES = ['python3-pytest', 'flake8', 'black', 'tmux', 'chromium', 'slurm-wlm', 'munge'] as const;

/**
 * The commands that give this machine what atk's Python side needs: on Debian/Ubuntu with apt and
 * root (or sudo), `apt-get install` of the missing packages; otherwise a private venv with CPU torch
 * from pip (the trainer then finds it; bubblewrap must come from the system's package manager).
 */
export function setupPlan(
  facts: MachineFacts,
  options: { readonly dev?: boolean; readonly venv?: string } = {},
): SetupPlan {
  const wanted = [...RUNTIME_PACKAGES, ...(options.dev ? DEV_PACKAGES : [])];
  const missing = wanted.filter((p) => !facts.installedPackages.has(p));
  if (canApt(facts)) {
    if (missing.length === 0) return { route: 'none', commands: [], notes: [] };
    return { route: 'apt', commands: aptInstall(facts, missing), notes: [] };
  }
  const notes: string[] = [];
  if (!facts.onPath.has('bwrap'))
    notes.push(
      'bubblewrap (bwrap) runs the code sandbox of run_python and code_tests: install it with your package manager',
    );
  if (options.dev && !facts.onPath.has('tmux'))
    notes.push('the terminal-UI tests also need tmux and chromium from your package manager');
  if (facts.torch && (!options.dev || facts.pytest)) return { route: 'none', commands: [], notes };
  const venv = options.venv ?? venvDir();
  const pip = join(venv, 'bin', 'pip');
  const packages = [...(facts.torch ? [] : ['torch']), ...(options.dev ? ['pytest'] : [])];
  return {
    route: 'venv',
    commands: [
      ['python3', '-m', 'venv', venv],
      [
        pip,
        'install',
        '--index-url',
        'https://download.pytorch.org/whl/cpu',
        '--extra-index-url',
        'https://pypi.org/simple',
        ...packages,
      ],
    ],
    notes,
  };
}

/** Whether setup can install Debian packages here: Debian or Ubuntu, apt-get, and root or sudo. */
export function canApt(facts: MachineFacts): boolean {
  const debian = facts.osIds.some((id) => id === 'debian' || id === 'ubuntu');
  return debian && facts.onPath.has('apt-get') && (facts.isRoot || facts.onPath.has('sudo'));
}

/** `apt-get update` and a non-interactive `apt-get install` of `packages`, through sudo unless root. */
export function aptInstall(facts: MachineFacts, packages: readonly string[]): SetupCommand[] {
  const sudo = facts.isRoot ? [] : ['sudo'];
  const apt = ['env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', 'install', '-y', '--no-install-recommends'];
  return [
    [...sudo, 'apt-get', 'update'] as unknown as SetupCommand,
    [...sudo, ...apt, ...packages] as unknown as SetupCommand,
  ];
}

/** A command as a shell line, for printing. */
export function commandLine(command: SetupCommand): string {
  return shellLine(command);
}
