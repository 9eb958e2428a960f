import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { bareDebianRoot } from '../__fixtures__/machine-facts.js';
import { type GpuMachineFacts, gpuRequirementsFile, gpuSetupPlan } from './gpu-plan.js';
import { commandLine } from './plan.js';

const debianGpu: GpuMachineFacts = {
  ...bareDebianRoot,
  onPath: new Set(['apt-get', 'python3']),
  venvTorch: null,
  venvPytest: false,
  python3Version: '3.11.2',
  platform: 'linux-x64',
};
const PATHS = { venv: '/home/u/.cache/atk/venv', requirements: '/atk/gpu.txt', devRequirements: '/atk/dev.txt' };
const PIP = join(PATHS.venv, 'bin', 'pip');

describe('gpuSetupPlan', () => {
  test('returns the sandbox and venv packages through apt, then a venv with the pinned CUDA torch from PyPI', () => {
    expect(gpuSetupPlan(debianGpu, PATHS)).toStrictEqual({
      route: 'gpu',
      commands: [
        ['apt-get', 'update'],
        [
          'env',
          'DEBIAN_FRONTEND=noninteractive',
          'apt-get',
          'install',
          '-y',
          '--no-install-recommends',
          'bubblewrap',
          'python3-venv',
        ],
        ['python3', '-m', 'venv', PATHS.venv],
        [PIP, 'install', '-r', '/atk/gpu.txt'],
      ],
      notes: [],
    });
  });

  test('returns the non-Python test tools through sudo apt and the Python ones into the venv, with dev', () => {
    const plan = gpuSetupPlan(
      {
        ...debianGpu,
        isRoot: false,
        onPath: new Set(['apt-get', 'sudo']),
        installedPackages: new Set(['bubblewrap', 'python3-venv']),
      },
      { ...PATHS, dev: true },
    );
    expect(plan.commands.map(commandLine)).toStrictEqual([
      'sudo apt-get update',
      'sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends tmux chromium slurm-wlm munge',
      `python3 -m venv ${PATHS.venv}`,
      `${PIP} install -r /atk/gpu.txt -r /atk/dev.txt`,
    ]);
  });

  test('returns nothing to do when the venv has a CUDA torch, and reinstalls over a CPU one', () => {
    const installed = { ...debianGpu, installedPackages: new Set(['bubblewrap', 'python3-venv']) };
    expect(gpuSetupPlan({ ...installed, venvTorch: { version: '2.15.0', cuda: '13.2' } }, PATHS)).toStrictEqual({
      route: 'none',
      commands: [],
      notes: [],
    });
    expect(
      gpuSetupPlan({ ...installed, venvTorch: { version: '2.15.0+cpu', cuda: null } }, PATHS).commands.map(commandLine),
    ).toStrictEqual([`${PIP} install --force-reinstall -r /atk/gpu.txt`]);
    expect(
      gpuSetupPlan(
        { ...installed, venvTorch: { version: '2.15.0', cuda: '13.2' } },
        { ...PATHS, dev: true },
      ).commands.map(commandLine),
    ).toStrictEqual([
      'apt-get update',
      'env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends tmux chromium slurm-wlm munge',
      `${PIP} install -r /atk/gpu.txt -r /atk/dev.txt`,
    ]);
  });

  test('returns the venv alone without apt, saying what it cannot install and what will not be CUDA', () => {
    const plan = gpuSetupPlan(
      {
        ...debianGpu,
        osIds: ['fedora'],
        onPath: new Set(['python3']),
        python3Version: '3.10.12',
        platform: 'darwin-arm64',
      },
      PATHS,
    );
    expect(plan).toStrictEqual({
      route: 'gpu',
      commands: [
        ['python3', '-m', 'venv', PATHS.venv],
        [PIP, 'install', '-r', '/atk/gpu.txt'],
      ],
      notes: [
        'PyPI has CUDA builds of torch for Linux only; on darwin-arm64 the venv gets a CPU torch',
        'python3 is 3.10.12; the pinned torch needs Python >= 3.11 (put a newer python3 first on PATH)',
        'bubblewrap (bwrap) runs the code sandbox of run_python and code_tests: install it with your package manager',
      ],
    });
  });
});

describe('gpuRequirementsFile', () => {
  test('returns the shipped requirements, which pin one torch version', async () => {
    const { readFileSync } = await import('node:fs');
    const pins = readFileSync(gpuRequirementsFile(), 'utf8')
      .split('\n')
      .filter((line) => line.trim() && !line.startsWith('#'));
    expect(pins).toHaveLength(1);
    expect(pins[0]).toMatch(/^torch==\d+\.\d+\.\d+$/);
  });
});
