import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { commandLine, setupPlan, type MachineFacts } from './plan.js';

const debianRoot: MachineFacts = {
  osIds: ['debian'],
  isRoot: true,
  onPath: new Set(['apt-get', 'python3']),
  installedPackages: new Set(['libopenblas0-pthread']),
  torch: false,
  pytest: false,
};

describe('setupPlan', () => {
  test('returns apt-get update and install of the missing packages as root on Debian', () => {
    expect(setupPlan(debianRoot)).toStrictEqual({
      route: 'apt',
      commands: [
        ['apt-get', 'update'],
        [
          'env',
          'DEBIAN_FRONTEND=noninteractive',
          'apt-get',
          'install',
          '-y',
          '--no-install-recommends',
          'python3-torch',
          'bubblewrap',
          'python3-venv',
        ],
      ],
      notes: [],
    });
  });

  test('returns the same through sudo for a user on Ubuntu, with the test packages for dev', () => {
    const plan = setupPlan(
      { ...debianRoot, osIds: ['ubuntu', 'debian'], isRoot: false, onPath: new Set(['apt-get', 'sudo']) },
      { dev: true },
    );
    expect(plan.commands.map(commandLine)).toStrictEqual([
      'sudo apt-get update',
      'sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-torch bubblewrap python3-venv python3-pytest flake8 black tmux chromium slurm-wlm munge',
    ]);
  });

  test('returns nothing to do when every package is installed', () => {
    expect(
      setupPlan({
        ...debianRoot,
        installedPackages: new Set(['python3-torch', 'libopenblas0-pthread', 'bubblewrap', 'python3-venv']),
      }),
    ).toStrictEqual({ route: 'none', commands: [], notes: [] });
  });

  test("returns a private venv with CPU torch from pip elsewhere, and says bubblewrap is the system's", () => {
    const plan = setupPlan(
      {
        osIds: ['fedora'],
        isRoot: false,
        onPath: new Set(['python3']),
        installedPackages: new Set(),
        torch: false,
        pytest: false,
      },
      { venv: '/home/u/.cache/atk/venv' },
    );
    expect(plan.route).toBe('venv');
    expect(plan.commands.map(commandLine)).toStrictEqual([
      'python3 -m venv /home/u/.cache/atk/venv',
      `${join('/home/u/.cache/atk/venv', 'bin', 'pip')} install --index-url https://download.pytorch.org/whl/cpu --extra-index-url https://pypi.org/simple torch`,
    ]);
    expect(plan.notes).toStrictEqual([
      'bubblewrap (bwrap) runs the code sandbox of run_python and code_tests: install it with your package manager',
    ]);
  });

  test('returns a venv on Debian without root or sudo, and nothing once torch imports', () => {
    const user = { ...debianRoot, isRoot: false, onPath: new Set(['apt-get', 'bwrap']) };
    expect(setupPlan(user, { venv: '/v' }).route).toBe('venv');
    expect(setupPlan({ ...user, torch: true }, { venv: '/v' })).toStrictEqual({
      route: 'none',
      commands: [],
      notes: [],
    });
  });
});

describe('commandLine', () => {
  test('returns words quoted only when the shell needs it', () => {
    expect(commandLine(['echo', 'a b', "it's", 'x=1'])).toBe("echo 'a b' 'it'\\''s' x=1");
  });
});
