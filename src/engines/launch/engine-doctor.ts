import { dirname } from 'node:path';
import { ENGINE_VERSION_RANGES, installedEngineVersion, judgeEngineVersion } from './engine-version.js';
import { vllmExecutable } from './vllm-venv.js';

/** One `atk doctor` row (the shape of src/cli/doctor-checks.ts DoctorRow). */
export interface EngineDoctorRow {
  readonly check: string;
  readonly status: 'pass' | 'warn' | 'fail';
  readonly detail: string;
  readonly fix?: string;
}

/**
 * The installed vLLM (`vllm --version`) or SGLang (`python -c 'import sglang'`) against the versions
 * atk's clients and weight sync were written for: pass inside the range, warn outside it or when absent
 * (only vllm/sglang recipes need them). vLLM is looked for in atk's own venv first (`atk setup --engine
 * vllm`, also the fix offered), then on PATH. Never throws.
 */
export async function engineVersionCheck(kind: 'vllm' | 'sglang', python?: string): Promise<EngineDoctorRow> {
  const range = ENGINE_VERSION_RANGES[kind];
  const install =
    kind === 'vllm' ? 'atk setup --engine vllm' : `pip install "${kind}>=${range.min},<=${range.newestKnown}"`;
  const version = await installedEngineVersion(kind, python).catch(() => null);
  if (version === null)
    return {
      check: kind,
      status: 'warn',
      detail: 'not installed',
      fix: `only needed for engine kind ${kind}: ${install}`,
    };
  const executable = kind === 'vllm' ? vllmExecutable() : undefined;
  const where = executable && executable !== 'vllm' ? `, in ${dirname(dirname(executable))}` : '';
  const verdict = judgeEngineVersion(kind, version);
  if (verdict.status === 'ok') return { check: kind, status: 'pass', detail: `${verdict.message}${where}` };
  return {
    check: kind,
    status: 'warn',
    detail: `${verdict.message}${where}`,
    fix: verdict.status === 'too-old' ? install : `if requests or weight sync fail: ${install}`,
  };
}

/** Both engines' rows, for `atk doctor`. */
export async function engineVersionChecks(python?: string): Promise<EngineDoctorRow[]> {
  return Promise.all([engineVersionCheck('vllm'), engineVersionCheck('sglang', python)]);
}
