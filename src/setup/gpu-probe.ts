import { join } from 'node:path';
import { execa } from 'execa';
import { venvDir } from '../util/paths.js';
import type { GpuMachineFacts } from './gpu-plan.js';
import { debianPackages, probeMachine } from './probe.js';
import { GPU_APT_PACKAGES } from './gpu-plan.js';

// torch's version and the CUDA version it was built for (None for a CPU build), and whether pytest is there.
const VENV_PROBE = `
import importlib.util, json
out = {"torch": None, "pytest": importlib.util.find_spec("pytest") is not None}
if importlib.util.find_spec("torch") is not None:
    import torch
    out["torch"] = {"version": torch.__version__, "cuda": torch.version.cuda}
print(json.dumps(out))
`;

/** Probe this machine for what `gpuSetupPlan` needs to know: `probeMachine`'s facts, atk's venv and python3. Never throws. */
export async function probeGpuMachine(venv: string = venvDir()): Promise<GpuMachineFacts> {
  const [base, extraPackages, inVenv, python3] = await Promise.all([
    probeMachine(),
    debianPackages(GPU_APT_PACKAGES),
    execa(join(venv, 'bin', 'python'), ['-c', VENV_PROBE], { reject: false, timeout: 120_000 }),
    execa('python3', ['--version'], { reject: false }),
  ]);
  let venvTorch: GpuMachineFacts['venvTorch'] = null;
  let venvPytest = false;
  if (inVenv.exitCode === 0) {
    try {
      const parsed = JSON.parse(String(inVenv.stdout).trim().split('\n').pop() ?? '') as {
        torch: GpuMachineFacts['venvTorch'];
        pytest: boolean;
      };
      venvTorch = parsed.torch;
      venvPytest = parsed.pytest;
    } catch {
      // An unreadable answer is a venv to make again: the plan then reinstalls into it.
    }
  }
  return {
    ...base,
    installedPackages: new Set([...base.installedPackages, ...extraPackages]),
    venvTorch,
    venvPytest,
    python3Version: python3.exitCode === 0 ? (String(python3.stdout).match(/(\d+\.\d+(\.\d+)?)/)?.[1] ?? null) : null,
    platform: `${process.platform}-${process.arch}`,
  };
}
