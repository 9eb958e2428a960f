import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { venvDir } from '../util/paths.js';
import { GPU_APT_PACKAGES, type GpuMachineFacts, VENV_STAMPS } from './gpu-plan.js';
import { debianPackages, probeMachine } from './probe.js';

// torch's version and the CUDA version it was built for (None for a CPU build).
const VENV_PROBE = `
import importlib.util, json
torch = None
if importlib.util.find_spec("torch") is not None:
    import torch
    torch = {"version": torch.__version__, "cuda": torch.version.cuda}
print(json.dumps(torch))
`;

/** Probe this machine for what `gpuSetupPlan` needs to know: `probeMachine`'s facts, atk's venv and python3. Never throws. */
export async function probeGpuMachine(venv: string = venvDir()): Promise<GpuMachineFacts> {
  const stamp = (file: string): Promise<string | null> => readFile(join(venv, file), 'utf8').catch(() => null);
  const [base, extraPackages, inVenv, python3, gpu, dev] = await Promise.all([
    probeMachine(),
    debianPackages(GPU_APT_PACKAGES),
    execa(join(venv, 'bin', 'python'), ['-c', VENV_PROBE], { reject: false, timeout: 120_000 }),
    execa('python3', ['--version'], { reject: false }),
    stamp(VENV_STAMPS.gpu),
    stamp(VENV_STAMPS.dev),
  ]);
  let venvTorch: GpuMachineFacts['venvTorch'] = null;
  try {
    if (inVenv.exitCode === 0) venvTorch = JSON.parse(String(inVenv.stdout).trim().split('\n').pop() ?? '');
  } catch {
    // An unreadable answer counts as no torch: the plan then installs into the venv again.
  }
  return {
    ...base,
    installedPackages: new Set([...base.installedPackages, ...extraPackages]),
    venvTorch,
    venvStamps: { gpu, dev },
    python3Version: python3.exitCode === 0 ? (String(python3.stdout).match(/(\d+\.\d+(\.\d+)?)/)?.[1] ?? null) : null,
    platform: `${process.platform}-${process.arch}`,
  };
}
