// Commands that stand in for `vllm serve` in launcher tests: the engine double as a process (node + tsx),
// and small shell scripts that crash, hang or fork.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { projectRoot } from '../util/paths.js';
import { staleSources } from './built-cli.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const tsxLoader = fileURLToPath(import.meta.resolve('tsx'));

/** Runs a TypeScript file of this folder with node + tsx. */
export function tsScript(file: string): string[] {
  return [process.execPath, '--import', tsxLoader, join(here, file)];
}

let buildIsCurrent: boolean | undefined;

/**
 * The atk CLI as a command line: the build in dist/ when it is a build of the current sources (npm test
 * builds first), else the sources through tsx. The same code either way; the build starts with about two
 * CPU-seconds less, which tests that start atk many times feel.
 */
export function atkCliCommand(): string[] {
  buildIsCurrent ??= staleSources(projectRoot()).length === 0;
  return buildIsCurrent ? [process.execPath, join(projectRoot(), 'bin', 'atk')] : tsScript('atk-cli.ts');
}

/** The engine double taking vLLM/SGLang arguments. */
export const doubleEngineCommand: readonly string[] = tsScript('engine-double-main.ts');

/** The bundled trainer's embedded engine behind a `vllm serve`-compatible command line (Debian's python3 has torch). */
export const embeddedVllmCommand: readonly string[] = ['/usr/bin/python3', join(here, 'embedded-vllm-serve.py')];

/** The same engine behind a `python -m sglang.launch_server`-compatible command line and SGLang's routes. */
export const embeddedSglangCommand: readonly string[] = ['/usr/bin/python3', join(here, 'embedded-sglang-serve.py')];

/** True while a process with this pid runs (a zombie, dead but not yet reaped, counts as gone). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = readFileSafe(`/proc/${pid}/stat`);
  return !/^\d+ \(.*\) Z/.test(stat);
}

/** Pids of the live processes whose command line contains `fragment` (e.g. a model directory only one test serves). */
export function processesRunning(fragment: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry) && Number(entry) !== process.pid)
    .filter((pid) => readFileSafe(`/proc/${pid}/cmdline`).split('\0').join(' ').includes(fragment))
    .map(Number)
    .filter(alive);
}

function readFileSafe(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}
