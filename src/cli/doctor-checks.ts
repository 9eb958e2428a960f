/**
 * What `atk doctor` checks: each check looks at one thing atk needs and says pass, warn or
 * fail, and for anything but pass how to fix it. Checks run concurrently and never throw.
 */
import { existsSync, readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { engineDoctorRows } from '../policy/index.js';
import { loadRecipe } from '../recipe/index.js';
import { fitsGpus, needsText, type RecipeGpuNeeds, recipeGpuNeeds } from '../setup/gpu-fit.js';
import { nvidiaSmi } from '../setup/probe.js';
import { sandboxCapabilities } from '../tools/sandbox/index.js';
import { findPython, type PythonInfo } from '../trainer/find-python.js';
import { dataDir, projectRoot } from '../util/paths.js';

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
  const smi = nvidiaSmi();
  const [node, torch, blas, gpu, engines, sandbox, data] = await Promise.all([
    nodeCheck(process.versions.node),
    python.then(({ info, tried }) => torchCheck(info, tried)),
    python.then(({ info }) => blasCheck(info)),
    python.then(({ info }) => gpuCheck(info, () => smi)),
    python.then(({ info }) => engineDoctorRows(info?.python)),
    sandboxCheck(),
    dataDirCheck(dataDir()),
  ]);
  // Loaded once the sandbox probe has settled: a recipe loaded while that probe's program runs leaves the probe
  // waiting forever (sandboxCapabilities() beside loadRecipe() in one process).
  const recipes = await gpuRecipeRows(gpuMemoryGiB(await smi));
  return [node, torch, blas, gpu, ...recipes, ...engines, sandbox, data];
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
      fix: 'atk setup (or atk doctor --fix): python3-torch libopenblas0-pthread through apt, else a venv; atk setup --gpu: a CUDA torch; or set ATK_PYTHON to a Python with torch',
    };
  }
  const extras = [info.transformers && `transformers ${info.transformers}`, info.peft && `peft ${info.peft}`]
    .filter(Boolean)
    .join(', ');
  const build = info.cudaBuild ? `CUDA ${info.cudaBuild} build` : 'CPU build';
  const sees = info.cudaBuild ? `, sees ${info.gpuCount} GPU${info.gpuCount === 1 ? '' : 's'}` : '';
  return {
    check: 'python + torch',
    status: 'pass',
    detail: `${info.python} (Python ${info.pythonVersion}): torch ${info.torchVersion} (${build}${sees})${extras ? `; ${extras}` : '; built-in model code for qwen2, qwen3, llama and mistral (no transformers)'}`,
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
  if (info && !info.cudaBuild)
    return {
      check: 'gpus',
      status: 'warn',
      detail: `${detail}; but torch ${info.torchVersion} in ${info.python} is a CPU build`,
      fix: "atk setup --gpu --yes: a CUDA build of torch into atk's venv, which the trainer then uses (or set ATK_PYTHON to a Python with one)",
    };
  if (info && !info.cuda) {
    const driver = gpus[0]!.split(',').at(-1)?.trim() ?? '';
    const needed = minimumDriver(info.cudaBuild!);
    return {
      check: 'gpus',
      status: 'warn',
      detail: `${detail}; but torch ${info.torchVersion} (CUDA ${info.cudaBuild} build) sees none`,
      fix: `CUDA ${info.cudaBuild} needs an NVIDIA driver >= ${needed} (found ${driver || 'unknown'}); update the driver, or check CUDA_VISIBLE_DEVICES`,
    };
  }
  return { check: 'gpus', status: 'pass', detail };
}

/** The oldest Linux driver a CUDA major version runs on (NVIDIA's minor-version compatibility table). */
function minimumDriver(cuda: string): string {
  const major = Number(cuda.split('.')[0]);
  return major >= 13 ? '580' : major === 12 ? '525' : major === 11 ? '450' : 'the one its release notes name';
}

/** Each GPU's total memory in GiB, from nvidia-smi's `name, memory.total, driver_version` lines (`81559 MiB`). */
export function gpuMemoryGiB(smi: string | null): number[] {
  return (smi ?? '')
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => Number(line.split(',')[1]?.match(/([\d.]+)\s*MiB/)?.[1] ?? 0) / 1024);
}

/**
 * Which shipped GPU recipes fit this machine's GPUs (`gpuGiB`, by index): their weights, gradients,
 * optimizer state and engine shares under `recipeGpuNeeds`' rule. Without GPUs one row says what each needs;
 * with GPUs one row per recipe. Cluster recipes are left to `atk validate` inside their allocation.
 */
export async function gpuRecipeRows(
  gpuGiB: readonly number[],
  files: readonly string[] = shippedRecipeFiles(),
): Promise<DoctorRow[]> {
  const fix = 'the memory rule and measured figures: docs/gpu.md#which-recipes-fit';
  const all = await Promise.all(
    files.map(async (file) => ({ name: basename(file, '.yaml'), needs: await needsOf(file) })),
  );
  const onGpus = all.filter((r) => r.needs.kind === 'gpus' || r.needs.kind === 'unknown');
  const text = (needs: RecipeGpuNeeds): string =>
    needs.kind === 'gpus' ? needsText(needs.needs) : needs.kind === 'unknown' ? needs.reason : needs.kind;
  if (gpuGiB.length === 0) {
    const listed = onGpus.map((r) => `${r.name} (${text(r.needs)})`).join('; ');
    return [{ check: 'gpu recipes', status: 'warn', detail: `no GPU here; they need: ${listed}`, fix }];
  }
  return onGpus.map(({ name, needs }): DoctorRow => {
    const check = `recipe ${name}`;
    if (needs.kind !== 'gpus') return { check, status: 'warn', detail: text(needs), fix };
    const { fits, why } = fitsGpus(needs.needs, gpuGiB);
    return fits ? { check, status: 'pass', detail: `fits: ${why}` } : { check, status: 'warn', detail: why, fix };
  });
}

async function needsOf(file: string): Promise<RecipeGpuNeeds> {
  try {
    return recipeGpuNeeds((await loadRecipe(file)).recipe);
  } catch (error) {
    return { kind: 'unknown', reason: error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error) };
  }
}

/** The recipes atk ships at the top of recipes/ (smoke/, tiny/ and examples/ are CPU tests and starters). */
function shippedRecipeFiles(): string[] {
  const dir = join(projectRoot(), 'recipes');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => join(dir, f));
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
