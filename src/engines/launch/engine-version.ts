import { execa } from 'execa';
import { requestJson, type HttpTarget } from '../../util/http.js';
import { vllmExecutable } from './vllm-venv.js';

/** Versions atk's engine clients and sync were written against (docs/engines.md). */
export const ENGINE_VERSION_RANGES: Readonly<
  Record<'vllm' | 'sglang', { readonly min: string; readonly newestKnown: string; readonly why: string }>
> = {
  // 0.10.2: return_token_ids, temperature-scaled processed logprobs and /collective_rpc (full-weight sync);
  // 0.33.0 is the newest release atk was checked against.
  vllm: {
    min: '0.10.2',
    newestKnown: '0.33.0',
    why: 'return_token_ids on /v1/completions and processed logprobs arrived in 0.10.2',
  },
  // The native /generate, LoRA and update_weights_from_disk shapes atk speaks are those of 0.5.x.
  sglang: { min: '0.5.0', newestKnown: '0.5.23', why: 'atk speaks the 0.5 /generate and weight-update API' },
};

/** How an installed or running engine version relates to the range above. */
export interface VersionVerdict {
  readonly status: 'ok' | 'too-old' | 'newer' | 'unknown';
  readonly message: string;
}

/** Compares dotted versions numerically (`0.10.2` > `0.9.9`); pre-release suffixes are ignored. */
export function compareVersions(a: string, b: string): number {
  const parts = (v: string): number[] =>
    v
      .replace(/^v/, '')
      .split(/[.+-]/)
      .slice(0, 3)
      .map((p) => Number.parseInt(p, 10) || 0);
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
  return 0;
}

/** Judges a version against ENGINE_VERSION_RANGES: too old is an error, newer than known a warning. */
export function judgeEngineVersion(kind: 'vllm' | 'sglang', version: string | null): VersionVerdict {
  const range = ENGINE_VERSION_RANGES[kind];
  if (!version) return { status: 'unknown', message: `${kind} version unknown; atk needs >= ${range.min}` };
  if (compareVersions(version, range.min) < 0)
    return { status: 'too-old', message: `${kind} ${version} is older than ${range.min} (${range.why})` };
  if (compareVersions(version, range.newestKnown) > 0) {
    return {
      status: 'newer',
      message: `${kind} ${version} is newer than ${range.newestKnown}, the newest atk was written for; its APIs may have changed`,
    };
  }
  return { status: 'ok', message: `${kind} ${version} (atk supports ${range.min} to ${range.newestKnown})` };
}

/**
 * Version of the installed engine, asked of its command line: `vllm --version` (atk's venv's vllm, else PATH's), or sglang's
 * `__version__` through `python`. Null when it is not installed or does not answer within 60 s.
 */
export async function installedEngineVersion(kind: 'vllm' | 'sglang', python = 'python3'): Promise<string | null> {
  const [file, ...args] = VERSION_PROBES[kind].installed(python);
  const result = await execa(file!, args, { reject: false, timeout: 60_000 });
  if (result.exitCode !== 0) return null;
  return versionIn(String(result.stdout));
}

/** Version of a running engine: vLLM `GET /version`, SGLang `GET /get_server_info` (then `/server_info`). Null when absent. */
export async function runningEngineVersion(kind: 'vllm' | 'sglang', baseUrl: string): Promise<string | null> {
  const target: HttpTarget = { name: kind, baseUrl, timeoutMs: 10_000, retries: 1, backoffMs: 200 };
  for (const path of VERSION_PROBES[kind].routes) {
    try {
      const reply = (await requestJson(target, 'GET', path)) as { version?: unknown };
      if (typeof reply.version === 'string') return reply.version;
    } catch {
      // older or newer servers name the route differently; try the next
    }
  }
  return null;
}

/** How each engine tells its version: the installed one's command line, the running one's routes (in order). */
const VERSION_PROBES: Readonly<
  Record<'vllm' | 'sglang', { installed(python: string): readonly string[]; readonly routes: readonly string[] }>
> = {
  vllm: { installed: () => [vllmExecutable(), '--version'], routes: ['/version'] },
  sglang: {
    installed: (python) => [python, '-c', 'import sglang; print(sglang.__version__)'],
    routes: ['/get_server_info', '/server_info'],
  },
};

function versionIn(text: string): string | null {
  return /\d+\.\d+(?:\.\d+)?(?:[.+-][0-9A-Za-z.]+)?/.exec(text)?.[0] ?? null;
}
