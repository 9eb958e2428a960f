/**
 * What `atk doctor` checks: each check looks at one thing atk needs and says pass, warn or
 * fail, and for anything but pass how to fix it. Checks run concurrently and never throw.
 */
import { existsSync, readdirSync } from 'node:fs';
import { engineDoctorRows } from '../policy/index.js';
import { nvidiaSmi } from '../setup/probe.js';
import { sandboxCapabilities } from '../tools/sandbox/index.js';
import { findPython, type PythonInfo } from '../trainer/find-python.js';
import { dataDir } from '../util/paths.js';

export type DoctorStatus = 'pass' | 'warn' | 'fail';

/** One row of the doctor table. */
export interface DoctorRow {
  readonly check: string;
  readonly status: DoctorStatus;
  /** What was found. */
  readonly detail: string;
  /** How to fix it; present on every warn and fail row. */
  readonly fix?: string;
}

const NODE22 =
  'run npm ci in the atk folder (Node 22 comes as the package dependency node@22), or: npm install --prefix ~/.cache/atk/node22 node@22 && export PATH=~/.cache/atk/node22/node_modules/.bin:$PATH';

/** Run every check. */
export async function doctorChecks(): Promise<DoctorRow[]> {
  const python = findPython();
  const [node, torch, blas, gpu, engines, sandbox, data] = await Promise.all([
    nodeCheck(process.versions.node),
    python.then(({ info, tried }) => torchCheck(info, tried)),
    python.then(({ info }) => blasCheck(info)),
    python.then(({ info }) => gpuCheck(info)),
    python.then(({ info }) => engineDoctorRows(info?.python)),
    sandboxCheck(),
    dataDirCheck(dataDir()),
  ]);
  return [node, torch, blas, gpu, ...engines, sandbox, data];
}

/** Node >= 22 is required (the Strands SDK, ink, execa). */
export function nodeCheck(version: string): DoctorRow {
  const major = Number(version.split('.')[0]);
  return major >= 22
    ? { check: 'node', status: 'pass', detail: `v${version}` }
    : { check: 'node', status: 'fail', detail: `v${version}; atk needs >= 22`, fix: NODE22 };
}

/** A Python that imports torch runs the trainer (and the embedded engine). */
export function torchCheck(info: PythonInfo | null, tried: readonly string[]): DoctorRow {
  if (!info) {
    return {
      check: 'python + torch',
      status: 'fail',
      detail: `no Python can import torch (${tried.join('; ')})`,
      fix: 'atk setup (or atk doctor --fix): python3-torch libopenblas0-pthread through apt, else a venv; or set ATK_PYTHON to a Python with torch',
    };
  }
  const extras = [info.transformers && `transformers ${info.transformers}`, info.peft && `peft ${info.peft}`]
    .filter(Boolean)
    .join(', ');
  return {
    check: 'python + torch',
    status: 'pass',
    detail: `${info.python} (Python ${info.pythonVersion}): torch ${info.torchVersion}, ${info.cuda ? `CUDA, ${info.gpuCount} GPU(s)` : 'CPU only'}${extras ? `; ${extras}` : '; built-in model code for qwen2, qwen3, llama and mistral (no transformers)'}`,
  };
}

/** CPU torch is only fast with an optimised BLAS; Debian's falls back to the reference one. */
export function blasCheck(info: PythonInfo | null): DoctorRow {
  const fix = 'apt-get install libopenblas0-pthread (Debian/Ubuntu: it becomes the libblas.so.3 alternative)';
  if (!info)
    return {
      check: 'openblas',
      status: 'warn',
      detail: 'unknown: no Python with torch',
      fix: 'fix python + torch first',
    };
  const where = info.blasLibrary ? ` (${info.blasLibrary})` : '';
  if (info.blas === 'openblas' || info.blas === 'mkl')
    return { check: 'openblas', status: 'pass', detail: `torch uses ${info.blas}${where}` };
  if (info.blas === 'reference') {
    return {
      check: 'openblas',
      status: info.cuda ? 'warn' : 'fail',
      detail: `torch uses the reference BLAS${where}: CPU training is many times slower`,
      fix,
    };
  }
  return { check: 'openblas', status: 'warn', detail: 'could not tell which BLAS torch uses', fix };
}

/** GPUs: optional (the embedded engine runs on CPU); vllm/sglang recipes need them. `probe` stands in for nvidia-smi in tests. */
export async function gpuCheck(
  info: PythonInfo | null,
  probe: () => Promise<string | null> = nvidiaSmi,
): Promise<DoctorRow> {
  const gpus = (await probe())?.trim().split('\n').filter(Boolean) ?? [];
  if (gpus.length === 0) {
    return {
      check: 'gpus',
      status: 'warn',
      detail: 'no NVIDIA GPU found (nvidia-smi)',
      fix: 'only needed for vllm/sglang recipes and GPU training; the embedded engine runs on CPU',
    };
  }
  const detail = `${gpus.length}: ${gpus.map((g) => g.replace(/\s*,\s*/g, ', ')).join('; ')}`;
  if (info && !info.cuda)
    return {
      check: 'gpus',
      status: 'warn',
      detail: `${detail}; but torch in ${info.python} has no CUDA`,
      fix: 'install a CUDA build of torch (or set ATK_PYTHON to one) to train on the GPU',
    };
  return { check: 'gpus', status: 'pass', detail };
}

/** bubblewrap sandboxes model-written code (run_python, code_tests). */
export async function sandboxCheck(): Promise<DoctorRow> {
  const caps = await sandboxCapabilities();
  if (caps.namespaces) return { check: 'bubblewrap', status: 'pass', detail: caps.detail };
  return {
    check: 'bubblewrap',
    status: 'warn',
    detail: caps.detail,
    fix: caps.bwrap
      ? 'allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) or run in a container that permits them'
      : 'apt-get install bubblewrap (needed by the code sandbox: run_python, code_tests)',
  };
}

/** Where gsm8k, deepcoder and tau2 data are read from. */
export function dataDirCheck(dir: string): DoctorRow {
  if (!existsSync(dir)) {
    return {
      check: 'data dir',
      status: 'warn',
      detail: `${dir} does not exist`,
      fix: 'set ATK_DATA_DIR, or fetch data: atk data fetch gsm8k (arith needs no data)',
    };
  }
  const present = readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  return present.length > 0
    ? { check: 'data dir', status: 'pass', detail: `${dir}: ${present.join(', ')}` }
    : {
        check: 'data dir',
        status: 'warn',
        detail: `${dir} is empty`,
        fix: 'atk data fetch gsm8k (or deepcoder, tau2); arith needs no data',
      };
}
