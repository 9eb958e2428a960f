import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { bareDebianRoot } from '../__fixtures__/machine-facts.js';
import { type GpuMachineFacts, gpuRequirementsFile, gpuSetupPlan } from './gpu-plan.js';
import { commandLine } from './plan.js';

const dir = mkdtempSync(join(tmpdir(), 'atk-gpu-plan-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const GPU_TXT = 'torch==2.15.0\n';
const DEV_TXT = 'pytest\n';
writeFileSync(join(dir, 'gpu.txt'), GPU_TXT);
writeFileSync(join(dir, 'dev.txt'), DEV_TXT);
const venv = '/home/u/.cache/atk/venv';
const PATHS = { venv, requirements: join(dir, 'gpu.txt'), devRequirements: join(dir, 'dev.txt') };
const PIP = join(venv, 'bin', 'pip');
const STAMP_GPU = `cp ${PATHS.requirements} ${join(venv, 'atk-requirements-gpu.txt')}`;
const STAMP_DEV = `cp ${PATHS.devRequirements} ${join(venv, 'atk-requirements-dev.txt')}`;

const debianGpu: GpuMachineFacts = {
  ...bareDebianRoot,
  onPath: new Set(['apt-get', 'python3']),
  venvTorch: null,
  venvStamps: { gpu: null, dev: null },
  python3Version: '3.11.2',
  platform: 'linux-x64',
};
const installed = { ...debianGpu, installedPackages: new Set(['bubblewrap', 'python3-venv']) };
const cudaVenv = { ...installed, venvTorch: { version: '2.15.0+cu132', cuda: '13.2' } };

describe('gpuSetupPlan', () => {
  test('returns the sandbox and venv packages through apt, then a venv with the pinned CUDA torch from PyPI and its stamp', () => {
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
        ['python3', '-m', 'venv', venv],
        [PIP, 'install', '-r', PATHS.requirements],
        ['cp', PATHS.requirements, join(venv, 'atk-requirements-gpu.txt')],
      ],
      notes: [],
    });
  });

  test('returns the non-Python test tools through sudo apt and the Python ones into the venv, with dev', () => {
    const plan = gpuSetupPlan(
      { ...installed, isRoot: false, onPath: new Set(['apt-get', 'sudo']) },
      { ...PATHS, dev: true },
    );
    expect(plan.commands.map(commandLine)).toStrictEqual([
      'sudo apt-get update',
      'sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends tmux chromium slurm-wlm munge',
      `python3 -m venv ${venv}`,
      `${PIP} install -r ${PATHS.requirements} -r ${PATHS.devRequirements}`,
      STAMP_GPU,
      STAMP_DEV,
    ]);
  });

  test('returns nothing to do for a CUDA torch installed from the requirements as they are, and installs again when they changed', () => {
    const current = { ...cudaVenv, venvStamps: { gpu: GPU_TXT, dev: null } };
    expect(gpuSetupPlan(current, PATHS)).toStrictEqual({ route: 'none', commands: [], notes: [] });
    expect(
      gpuSetupPlan({ ...cudaVenv, venvStamps: { gpu: 'torch==2.14.0\n', dev: null } }, PATHS).commands.map(commandLine),
    ).toStrictEqual([`${PIP} install -r ${PATHS.requirements}`, STAMP_GPU]);
    expect(gpuSetupPlan(current, { ...PATHS, dev: true }).commands.map(commandLine)).toStrictEqual([
      'apt-get update',
      'env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends tmux chromium slurm-wlm munge',
      `${PIP} install -r ${PATHS.requirements} -r ${PATHS.devRequirements}`,
      STAMP_GPU,
      STAMP_DEV,
    ]);
  });

  test('returns a reinstall over a CPU torch in the venv, which pip would take as the pinned version', () => {
    const cpu = {
      ...installed,
      venvTorch: { version: '2.15.0+cpu', cuda: null },
      venvStamps: { gpu: GPU_TXT, dev: null },
    };
    expect(gpuSetupPlan(cpu, PATHS).commands.map(commandLine)).toStrictEqual([
      `${PIP} install --force-reinstall -r ${PATHS.requirements}`,
      STAMP_GPU,
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
        ['python3', '-m', 'venv', venv],
        [PIP, 'install', '-r', PATHS.requirements],
        ['cp', PATHS.requirements, join(venv, 'atk-requirements-gpu.txt')],
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
  test('returns the shipped requirements, which pin torch and every other package to one version', () => {
    const pins = readFileSync(gpuRequirementsFile(), 'utf8')
      .split('\n')
      .filter((line) => line.trim() && !line.startsWith('#'));
    expect(pins[0]).toMatch(/^torch==\d+\.\d+\.\d+$/);
    expect(pins.filter((pin) => !/^[\w-]+==\d+\.\d+\.\d+$/.test(pin))).toStrictEqual([]);
  });
});
