import { execa } from 'execa';

/** A Python interpreter that can import torch, and what it reports about itself. */
export interface PythonInfo {
  readonly python: string;
  readonly pythonVersion: string;
  readonly torchVersion: string;
  readonly cuda: boolean;
  readonly gpuCount: number;
  readonly transformers: string | null;
  readonly peft: string | null;
  /** BLAS torch was built against, as torch reports it (e.g. "openblas"); empty when unknown. */
  readonly blas: string;
}

const PROBE = `
import json, sys, importlib.util
import torch
def version(name):
    if importlib.util.find_spec(name) is None: return None
    try: return __import__(name).__version__
    except Exception: return "unknown"
cfg = torch.__config__.show().lower()
blas = "openblas" if "openblas" in cfg else ("mkl" if "mkl" in cfg else "")
print(json.dumps({"pythonVersion": sys.version.split()[0], "torchVersion": torch.__version__,
  "cuda": torch.cuda.is_available(), "gpuCount": torch.cuda.device_count(),
  "transformers": version("transformers"), "peft": version("peft"), "blas": blas}))
`;

/**
 * Candidates in order: $ATK_PYTHON, the recipe's `model.trainer.python`, then python3 on PATH and
 * Debian's /usr/bin/python3 (where python3-torch lives even when another python3 comes first).
 */
export function pythonCandidates(recipePython?: string): string[] {
  const list = [process.env.ATK_PYTHON, recipePython, 'python3', '/usr/bin/python3', 'python'];
  return [...new Set(list.filter((p): p is string => Boolean(p)))];
}

/** The first candidate that can import torch, or null with the reasons each one failed. */
export async function findPython(recipePython?: string): Promise<{ info: PythonInfo | null; tried: string[] }> {
  const tried: string[] = [];
  for (const python of pythonCandidates(recipePython)) {
    const result = await execa(python, ['-c', PROBE], { reject: false, timeout: 60_000 });
    if (result.exitCode === 0) {
      try {
        return { info: { python, ...JSON.parse(String(result.stdout).trim().split('\n').pop() ?? '') }, tried };
      } catch {
        tried.push(`${python}: unreadable probe output`);
        continue;
      }
    }
    const reason = result.failed && result.code === 'ENOENT' ? 'not found' : lastLine(String(result.stderr)) || `exit ${result.exitCode}`;
    tried.push(`${python}: ${reason}`);
  }
  return { info: null, tried };
}

function lastLine(text: string): string {
  return text.trim().split('\n').pop() ?? '';
}
