// `atk eval` as a user runs it, for `npm run bench real`: the same greedy episodes on either engine, timed from
// the moment the episodes start to the moment they are scored (the engine's start-up is the same cost in every
// eval, and vLLM's is paid before, by whoever started the server), with the CPU seconds the engine's processes
// spent meanwhile, and each episode's token ids to check the engines produced the same episodes.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { processTree, treeCpuSeconds, treePeakRssMb } from './real-servers.js';

export interface EvalFigures {
  readonly seconds: number;
  /** CPU seconds of the engine's process tree while the episodes ran. */
  readonly engineCpuSeconds: number;
  /** CPU seconds of atk's own process tree meanwhile (the embedded engine's included). */
  readonly atkCpuSeconds: number;
  readonly engineRssMb: number;
  readonly accuracy: number;
  readonly failed: number;
  readonly generatedTokens: number;
  /** Token ids of each episode by task id. */
  readonly episodes: ReadonlyMap<string, readonly number[]>;
}

export interface EvalOptions {
  readonly root: string;
  readonly recipe: string;
  readonly overrides: readonly string[];
  readonly limit: number;
  readonly runsDir: string;
  /** A vllm server's pid (model.engine.kind url); without it the engine is the embedded one atk starts. */
  readonly enginePid?: number;
  readonly checkpoint?: string;
}

/** One `atk eval --json` run; rejects with its last stderr line when it fails. */
export function atkEval(options: EvalOptions): Promise<EvalFigures> {
  const args = [
    join(options.root, 'bin', 'atk'),
    'eval',
    options.recipe,
    ...options.overrides,
    `output.runs_dir=${options.runsDir}`,
    '--limit',
    String(options.limit),
    ...(options.checkpoint ? ['--checkpoint', options.checkpoint] : []),
    '--json',
    '--no-tui',
  ];
  const child = spawn('node', args, { cwd: options.root, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  let pending = '';
  let started: { at: number; engine: number; atk: number; enginePid: number } | undefined;
  let finished: { seconds: number; engine: number; atk: number; rss: number } | undefined;
  const enginePid = (): number =>
    options.enginePid ?? processTree(child.pid!).find((pid) => readCmdline(pid).includes('atk_trainer')) ?? child.pid!;
  child.stdout.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines) {
      const type = parseType(line);
      if (type === 'evalStarted') {
        const pid = enginePid();
        started = {
          at: performance.now(),
          engine: treeCpuSeconds(pid),
          atk: treeCpuSeconds(child.pid!),
          enginePid: pid,
        };
      } else if (type === 'evalFinished' && started) {
        finished = {
          seconds: (performance.now() - started.at) / 1000,
          engine: treeCpuSeconds(started.enginePid) - started.engine,
          atk: treeCpuSeconds(child.pid!) - started.atk,
          rss: treePeakRssMb(started.enginePid),
        };
      }
    }
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      if (code !== 0 || !finished) {
        reject(new Error(`atk eval failed (exit ${code}): ${stderr.trim().split('\n').at(-1) ?? ''}`));
        return;
      }
      const results = readResults(options.runsDir);
      resolve({
        seconds: finished.seconds,
        engineCpuSeconds: finished.engine,
        atkCpuSeconds: finished.atk,
        engineRssMb: finished.rss,
        ...results,
      });
    });
  });
}

/** Same episodes: task ids whose token ids are identical in both, of those both have. */
export function sameEpisodes(a: EvalFigures, b: EvalFigures): string {
  let same = 0;
  for (const [task, ids] of a.episodes) {
    const other = b.episodes.get(task);
    if (other && other.length === ids.length && other.every((t, i) => t === ids[i])) same++;
  }
  return `${same}/${a.episodes.size} token-identical`;
}

function parseType(line: string): string | undefined {
  try {
    return (JSON.parse(line) as { type?: string }).type;
  } catch {
    return undefined;
  }
}

function readCmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}

/** The eval's results.jsonl (the only one under `runsDir`): accuracy, failures, tokens and each episode's ids. */
function readResults(
  runsDir: string,
): Omit<EvalFigures, 'seconds' | 'engineCpuSeconds' | 'atkCpuSeconds' | 'engineRssMb'> {
  const file = findFile(runsDir, 'results.jsonl');
  const lines = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map(
      (l) =>
        JSON.parse(l) as {
          task_id: string;
          success: boolean;
          failed: boolean;
          stats: { generatedTokens: number };
          trajectory?: { ids: number[] };
        },
    );
  return {
    accuracy: lines.filter((l) => l.success).length / lines.length,
    failed: lines.filter((l) => l.failed).length,
    generatedTokens: lines.reduce((a, l) => a + (l.stats?.generatedTokens ?? 0), 0),
    episodes: new Map(lines.map((l) => [l.task_id, l.trajectory?.ids ?? []])),
  };
}

function findFile(dir: string, name: string): string {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (entry === name) return path;
    if (statSync(path).isDirectory()) {
      try {
        return findFile(path, name);
      } catch {
        // not in this one
      }
    }
  }
  throw new Error(`no ${name} under ${dir}`);
}
