import { existsSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { InputError } from '../../errors/index.js';

/** The file a viewer reads, and the run directory it belongs to (for the tokenizer and recipe), if any. */
export interface TrajectorySource {
  readonly file: string;
  readonly runDir: string | undefined;
}

export interface LocateOptions {
  /** Training step whose trajectories to read (the NNNNN of `trajectories/step-NNNNN.jsonl`). */
  readonly step?: number;
  /** Eval label whose results to read (`eval/<label>/results.jsonl`). */
  readonly eval?: string;
}

const STEP_FILE = /^step-(\d+)\.jsonl$/;

/**
 * Finds the trajectory lines a path names: a trajectories or results file as it is; an eval directory's
 * results.jsonl; a run directory's `--eval` results or `--step` trajectories (newest step by default);
 * a directory holding a `latest` pointer is followed first.
 * @throws InputError when nothing readable is there, listing what is.
 */
export async function locateTrajectories(path: string, options: LocateOptions = {}): Promise<TrajectorySource> {
  const target = resolve(path);
  const info = await stat(target).catch(() => undefined);
  if (!info)
    throw new InputError(`${path}: no such file or directory`, {
      hint: 'pass a run directory, a trajectories/step-NNNNN.jsonl file or an eval results.jsonl file',
    });
  if (info.isFile()) return { file: target, runDir: findRunDir(dirname(target)) };
  const latest = join(target, 'latest');
  if (!existsSync(join(target, 'trajectories')) && !existsSync(join(target, 'results.jsonl')) && existsSync(latest))
    return locateTrajectories(latest, options);
  if (existsSync(join(target, 'results.jsonl')) && options.eval === undefined)
    return { file: join(target, 'results.jsonl'), runDir: findRunDir(target) };
  if (options.eval !== undefined) return { file: await evalResults(target, options.eval), runDir: findRunDir(target) };
  const trajectoriesDir = existsSync(join(target, 'trajectories')) ? join(target, 'trajectories') : target;
  return { file: await stepFile(trajectoriesDir, options.step, path), runDir: findRunDir(trajectoriesDir) };
}

/** Step numbers with a trajectories file in a directory, ascending. */
export async function trajectorySteps(trajectoriesDir: string): Promise<number[]> {
  const names = await readdir(trajectoriesDir).catch(() => [] as string[]);
  return names.flatMap((n) => (STEP_FILE.test(n) ? [Number(STEP_FILE.exec(n)![1])] : [])).sort((a, b) => a - b);
}

/** Path of step `step`'s trajectories file (zero-padded like the run loop writes it). */
export function stepFilePath(trajectoriesDir: string, step: number): string {
  return join(trajectoriesDir, `step-${String(step).padStart(5, '0')}.jsonl`);
}

/**
 * The run directory a path lies in: the nearest of it and its three parents holding resolved.yaml
 * (a run dir, or a fresh eval directory for a bare recipe).
 */
export function findRunDir(start: string): string | undefined {
  let dir = resolve(start);
  for (let i = 0; i < 4; i++) {
    if (existsSync(join(dir, 'resolved.yaml'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return undefined;
}

async function stepFile(trajectoriesDir: string, step: number | undefined, shown: string): Promise<string> {
  const steps = await trajectorySteps(trajectoriesDir);
  if (steps.length === 0) {
    throw new InputError(`${shown}: no trajectories/step-NNNNN.jsonl files here`, {
      hint: 'pass a run directory of atk run, or an eval results file with --eval <label>',
    });
  }
  if (step === undefined) return stepFilePath(trajectoriesDir, steps[steps.length - 1]!);
  if (!steps.includes(step)) {
    throw new InputError(`${shown}: no trajectories for step ${step}`, {
      hint: `steps recorded: ${describeRange(steps)}`,
    });
  }
  return stepFilePath(trajectoriesDir, step);
}

async function evalResults(dir: string, label: string): Promise<string> {
  const evalDir = basename(dir) === 'eval' ? dir : join(dir, 'eval');
  const file = join(evalDir, label, 'results.jsonl');
  if (existsSync(file)) return file;
  const labels = (await readdir(evalDir, { withFileTypes: true }).catch(() => []))
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  throw new InputError(`${join(evalDir, label)}: no results.jsonl`, {
    hint: labels.length ? `evals recorded: ${labels.join(', ')}` : 'this run has no evals yet',
  });
}

function describeRange(steps: readonly number[]): string {
  if (steps.length <= 8) return steps.join(', ');
  return `${steps.slice(0, 3).join(', ')}, ..., ${steps.slice(-3).join(', ')} (${steps.length} files)`;
}
