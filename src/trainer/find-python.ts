import { join } from 'node:path';
import { execa } from 'execa';
import { venvDir } from '../util/paths.js';

/** A Python interpreter that can import torch, and what it reports about itself. */
export interface PythonInfo {
  readonly python: string;
  readonly pythonVersion: string;
  readonly torchVersion: string;
  readonly cuda: boolean;
  readonly gpuCount: number;
  /** The CUDA version torch was built for (`torch.version.cuda`); null for a CPU build. */
  readonly cudaBuild: string | null;
  /** The GPUs torch sees: name and total memory in GiB. */
  readonly gpus: readonly { readonly name: string; readonly memoryGiB: number }[];
  readonly transformers: string | null;
  readonly peft: string | null;
  /**
   * BLAS torch really uses: "openblas", "mkl", "reference" (netlib BLAS, slow: on Debian the
   * libblas.so.3 alternative points at it when libopenblas0-pthread is missing), or "" when unknown.
   */
  readonly blas: string;
  /** The BLAS shared library loaded in the probe process (Linux), e.g. .../openblas-pthread/libblas.so.3; "" when none was seen. */
  readonly blasLibrary: string;
}

// BLAS: Debian's torch links the generic libblas.so.3, whose alternative may be OpenBLAS or the
// slow reference BLAS, so torch's build config cannot say which one runs. The libraries mapped
// into the process after a matmul can (Linux); elsewhere fall back to the build config.
const PROBE = `
import json, os, sys, importlib.util
import torch
def version(name):
    if importlib.util.find_spec(name) is None: return None
    try: return __import__(name).__version__
    except Exception: return "unknown"
def blas():
    torch.ones(4, 4) @ torch.ones(4, 4)
    libs = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                name = os.path.basename(path).lower()
                if ("blas" in name or "mkl" in name) and path not in libs: libs.append(path)
    except OSError: pass
    joined = " ".join(libs).lower()
    for kind in ("openblas", "mkl"):
        if kind in joined: return kind, next(p for p in libs if kind in p.lower())
    generic = [p for p in libs if "libblas.so" in p]
    if generic: return "reference", generic[0]
    cfg = torch.__config__.show().lower()
    return ("openblas" if "openblas" in cfg else ("mkl" if "mkl" in cfg else "")), ""
kind, library = blas()
print(json.dumps({"pythonVersion": sys.version.split()[0], "torchVersion": torch.__version__,
  "cuda": torch.cuda.is_available(), "gpuCount": torch.cuda.device_count(), "cudaBuild": torch.version.cuda,
  "gpus": [{"name": p.name, "memoryGiB": round(p.total_memory / 2**30, 1)} for p in
           (torch.cuda.get_device_properties(i) for i in range(torch.cuda.device_count()))],
  "transformers": version("transformers"), "peft": version("peft"), "blas": kind, "blasLibrary": library}))
`;

/**
 * Candidates in order: $ATK_PYTHON, the recipe's `model.trainer.python`, then atk's venv (made by `atk
 * setup --gpu`, or by `atk setup` where apt cannot install torch: where it exists it was made for atk, so
 * its CUDA torch wins over a CPU torch of the system's), then python3 on PATH and Debian's /usr/bin/python3
 * (where python3-torch lives even when another python3 comes first).
 */
export function pythonCandidates(recipePython?: string): string[] {
  const list = [
    process.env.ATK_PYTHON,
    recipePython,
    join(venvDir(), 'bin', 'python'),
    'python3',
    '/usr/bin/python3',
    'python',
  ];
  return [...new Set(list.filter((p): p is string => Boolean(p)))];
}

/**
 * Pythons already found in this process, by candidates and the environment that decides what they import:
 * `atk run` checks for torch before it creates the run and the trainer launch asks again, and each probe
 * imports torch (seconds of CPU). A failure is never kept, so a probe after `atk setup` looks again.
 */
const found = new Map<string, PythonInfo>();

/** The first candidate that can import torch, or null with the reasons each one failed. */
export async function findPython(recipePython?: string): Promise<{ info: PythonInfo | null; tried: string[] }> {
  const candidates = pythonCandidates(recipePython);
  const key = JSON.stringify([candidates, process.env.PATH, process.env.PYTHONPATH, process.env.PYTHONHOME]);
  const known = found.get(key);
  if (known) return { info: known, tried: [] };
  const tried: string[] = [];
  for (const python of candidates) {
    const result = await execa(python, ['-c', PROBE], { reject: false, timeout: 60_000 });
    if (result.exitCode === 0) {
      try {
        const info: PythonInfo = { python, ...JSON.parse(String(result.stdout).trim().split('\n').pop() ?? '') };
        found.set(key, info);
        return { info, tried };
      } catch {
        tried.push(`${python}: unreadable probe output`);
        continue;
      }
    }
    tried.push(`${python}: ${failure(result)}`);
  }
  return { info: null, tried };
}

/** findTorchPython's answers in this process, keyed like `found`. */
const foundWithTorch = new Map<string, string>();

// Whether torch is installed, without importing it: a fraction of a second where the import costs seconds.
const HAS_TORCH = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('torch') else 3)";

/**
 * The first candidate (in `pythonCandidates` order) that has torch installed, or null with why each one was
 * passed over: all that `atk run` and `atk eval` need to start the trainer, which imports torch itself and
 * reports a broken install. Unlike `findPython` it imports nothing and checks every candidate at once,
 * so a run starts ~2 s sooner; `atk doctor` and `atk setup` still take the full probe.
 */
export async function findTorchPython(recipePython?: string): Promise<{ python: string | null; tried: string[] }> {
  const candidates = pythonCandidates(recipePython);
  // A run asks before it creates anything and again to launch the trainer; the second answer is the
  // first (a pyenv shim alone takes ~0.4 s to say it has no torch). Failures are asked again.
  const key = JSON.stringify([candidates, process.env.PATH, process.env.PYTHONPATH, process.env.PYTHONHOME]);
  const known = foundWithTorch.get(key);
  if (known) return { python: known, tried: [] };
  const results = await Promise.all(
    candidates.map((python) => execa(python, ['-c', HAS_TORCH], { reject: false, timeout: 60_000 })),
  );
  const tried: string[] = [];
  for (const [i, result] of results.entries()) {
    const python = candidates[i]!;
    if (result.exitCode === 0) {
      foundWithTorch.set(key, python);
      return { python, tried };
    }
    tried.push(`${python}: ${result.exitCode === 3 ? 'no torch installed' : failure(result)}`);
  }
  return { python: null, tried };
}

/** Why a candidate's probe failed: not on this machine, else the last line it printed, else its exit code. */
function failure(result: { failed: boolean; code?: string; stderr?: unknown; exitCode?: number }): string {
  if (result.failed && result.code === 'ENOENT') return 'not found';
  return (
    String(result.stderr ?? '')
      .trim()
      .split('\n')
      .pop() || `exit ${result.exitCode}`
  );
}
