/**
 * One run directory, `runs/<name>/<version>/`:
 *
 *   recipe.yaml  resolved.yaml  manifest.json  metrics.jsonl  summary.json
 *   trajectories/step-NNNNN.jsonl  eval/  checkpoints/step-NNNNN/  logs/
 *
 * metrics.jsonl is append-only; every other file is written whole and atomically, so a killed
 * run leaves files that are old or new, never torn, and `--resume` can trust what it finds.
 */
import { appendFile, mkdir, readdir, readFile, realpath, rm, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { InputError } from '../errors/index.js';
import { writeFileAtomic, writeJsonAtomic } from './atomic.js';
import { buildManifest, type Manifest, type RunStatus } from './manifest.js';
import { readMetricsFile, type MetricsLine } from './metrics.js';
import { trajectoryStepsToDelete, type TrajectoryRetention } from './retention.js';
import { lockRunDir, type LockOptions, type RunLock } from './run-lock.js';
import { allocateVersion, updateLatest } from './versions.js';

/** What `createRunDir` needs. */
export interface CreateRunOptions {
  /** Directory holding all runs (the recipe's `output.runs_dir`). */
  readonly runsDir: string;
  /** The recipe name; runs go to `<runsDir>/<name>/vNNN`. */
  readonly name: string;
  /** The recipe file's text as given. */
  readonly recipeText: string;
  /** `resolvedYaml(recipe)`. */
  readonly resolvedYaml: string;
  readonly seed: number;
  readonly recipeFile?: string;
  /** The command line, for the manifest. */
  readonly command?: readonly string[];
}

/** Where a checkpoint directory records that it is complete (resume uses only complete ones). */
export const CHECKPOINT_MARKER = 'atk-checkpoint.json';

const TERMINAL: ReadonlySet<RunStatus> = new Set(['finished', 'failed', 'interrupted']);

/** Zero-padded step in file names: `00042`. */
export function stepName(step: number): string {
  return `step-${String(step).padStart(5, '0')}`;
}

/**
 * Create the next version directory for `name`, take its writer lock, write recipe.yaml, resolved.yaml and
 * manifest.json (status running), create the subdirectories and move `latest` to it.
 */
export async function createRunDir(options: CreateRunOptions): Promise<RunDir> {
  const nameDir = resolve(options.runsDir, options.name);
  const version = await allocateVersion(nameDir);
  const run = new RunDir(join(nameDir, version));
  await run.lock();
  await writeFileAtomic(run.paths.recipe, options.recipeText);
  await writeFileAtomic(run.paths.resolved, options.resolvedYaml);
  await Promise.all(
    [run.trajectoriesDir, run.checkpointsDir, run.logsDir, run.evalDir].map((d) => mkdir(d, { recursive: true })),
  );
  const manifest = await buildManifest({
    name: options.name,
    version,
    seed: options.seed,
    resolvedYaml: options.resolvedYaml,
    ...(options.recipeFile !== undefined && { recipeFile: options.recipeFile }),
    ...(options.command !== undefined && { command: options.command }),
  });
  await writeJsonAtomic(run.paths.manifest, manifest);
  await updateLatest(nameDir);
  return run;
}

/**
 * Open an existing run directory (for `--resume` and `atk runs show`).
 * @throws InputError when `dir` holds no manifest.json.
 */
export async function openRunDir(dir: string): Promise<RunDir> {
  const found = await stat(join(dir, 'manifest.json')).catch(() => undefined);
  if (!found?.isFile())
    throw new InputError(`not a run directory (no manifest.json): ${dir}`, { hint: 'atk runs ls lists the runs' });
  // The real directory, so that `runs/<name>/latest` opens as its version.
  return new RunDir(await realpath(dir));
}

/** A run directory: its paths and the only writers of its files. */
export class RunDir {
  readonly dir: string;
  /** The recipe name (the parent directory's name). */
  readonly name: string;
  /** `v001`, ... */
  readonly version: string;
  readonly paths: {
    readonly recipe: string;
    readonly resolved: string;
    readonly manifest: string;
    readonly metrics: string;
    readonly summary: string;
  };
  readonly trajectoriesDir: string;
  readonly checkpointsDir: string;
  readonly logsDir: string;
  readonly evalDir: string;
  // Writes of one kind are chained so a read-modify-write never loses a concurrent update.
  private manifestQueue: Promise<unknown> = Promise.resolve();
  private metricsQueue: Promise<unknown> = Promise.resolve();
  private writerLock: RunLock | undefined;
  private readonly metricsListeners: Array<(line: MetricsLine) => void> = [];

  constructor(dir: string) {
    this.dir = dir;
    this.version = basename(dir);
    this.name = basename(dirname(dir));
    this.paths = {
      recipe: join(dir, 'recipe.yaml'),
      resolved: join(dir, 'resolved.yaml'),
      manifest: join(dir, 'manifest.json'),
      metrics: join(dir, 'metrics.jsonl'),
      summary: join(dir, 'summary.json'),
    };
    this.trajectoriesDir = join(dir, 'trajectories');
    this.checkpointsDir = join(dir, 'checkpoints');
    this.logsDir = join(dir, 'logs');
    this.evalDir = join(dir, 'eval');
  }

  /**
   * Take the run's writer lock (see run-lock.ts) before writing anything; a lock taken over from a
   * process that is gone is noted in the manifest's status history.
   * @throws InputError (exit 2) naming the holder when another live atk writes this run.
   */
  async lock(options: LockOptions = {}): Promise<void> {
    this.writerLock = await lockRunDir(this.dir, options);
    const previous = this.writerLock.tookOver;
    if (previous)
      await this.noteHistory(
        `took over the writer lock of atk pid ${previous.pid} on ${previous.host} (started ${previous.started_at})${options.force ? ' with --force' : ': that process is gone'}`,
      );
  }

  /** Release the writer lock, if this RunDir holds it. */
  async release(): Promise<void> {
    await this.writerLock?.release();
    this.writerLock = undefined;
  }

  /** The current manifest. */
  async manifest(): Promise<Manifest> {
    return JSON.parse(await readFile(this.paths.manifest, 'utf8')) as Manifest;
  }

  /**
   * The directory of the recipe file the run was started from, while it still exists: a resumed
   * run or an eval of this run resolves the user's tool and reward modules and commands against it
   * (resolved.yaml keeps them as written, relative to that recipe). Undefined when not recorded.
   */
  async recipeDir(): Promise<string | undefined> {
    const file = (await this.manifest()).recipe_file;
    if (file === undefined) return undefined;
    const dir = dirname(resolve(file));
    return (await stat(dir).catch(() => undefined))?.isDirectory() ? dir : undefined;
  }

  /** Merge `facts` into the manifest (mappings merge, anything else replaces) and write it atomically. */
  updateManifest(facts: Readonly<Record<string, unknown>>): Promise<Manifest> {
    return this.editManifest((m) => mergeRecords(m, { ...facts, updated_at: new Date().toISOString() }) as Manifest);
  }

  /** Record a status change; finished, failed and interrupted also set `finished_at`. */
  setStatus(status: RunStatus, message?: string): Promise<Manifest> {
    return this.editManifest((m) => {
      const at = new Date().toISOString();
      const { finished_at: _previous, ...rest } = m;
      return {
        ...rest,
        status,
        updated_at: at,
        ...(TERMINAL.has(status) && { finished_at: at }),
        ...(status === 'running' && { pid: process.pid }),
        status_history: [...m.status_history, { status, at, ...(message !== undefined && { message }) }],
      };
    });
  }

  /** Add an entry to the status history that keeps the current status. */
  private noteHistory(message: string): Promise<Manifest> {
    return this.editManifest((m) => ({
      ...m,
      status_history: [...m.status_history, { status: m.status, at: new Date().toISOString(), message }],
    }));
  }

  /** Append one line to metrics.jsonl, then hand it to each `onMetrics` listener (the trackers). */
  appendMetrics(line: object): Promise<void> {
    return this.enqueueMetrics(async () => {
      await appendFile(this.paths.metrics, `${JSON.stringify(line)}\n`);
      for (const listener of this.metricsListeners) listener(line as MetricsLine);
    });
  }

  /** Call `listener` with every metrics line appended from now on; it must not throw. */
  onMetrics(listener: (line: MetricsLine) => void): void {
    this.metricsListeners.push(listener);
  }

  /** Every complete line of metrics.jsonl (a torn last line from a killed writer is skipped). */
  readMetrics(): Promise<MetricsLine[]> {
    return readMetricsFile(this.paths.metrics);
  }

  /**
   * For resume: rewrite metrics.jsonl atomically keeping only lines whose `step` is <= `step`
   * (and lines without a step), so re-run steps are never recorded twice. Returns lines dropped.
   */
  truncateMetricsAfter(step: number): Promise<number> {
    return this.enqueueMetrics(async () => {
      const lines = await this.readMetrics();
      const kept = lines.filter((l) => typeof l.step !== 'number' || l.step <= step);
      await writeFileAtomic(this.paths.metrics, kept.map((l) => `${JSON.stringify(l)}\n`).join(''));
      return lines.length - kept.length;
    });
  }

  /** Write one step's trajectory records as `trajectories/step-NNNNN.jsonl`, whole and atomically. */
  async writeTrajectories(step: number, records: readonly unknown[]): Promise<void> {
    await writeFileAtomic(this.trajectoryPath(step), records.map((r) => `${JSON.stringify(r)}\n`).join(''));
  }

  /**
   * Delete the trajectory files that `keep` no longer keeps once step `latest` is written (see
   * retention.ts: the latest step and steps after it always stay). Returns the steps deleted.
   */
  async pruneTrajectories(latest: number, keep: TrajectoryRetention): Promise<number[]> {
    const gone = trajectoryStepsToDelete(await this.trajectorySteps(), latest, keep);
    await Promise.all(gone.map((s) => rm(this.trajectoryPath(s), { force: true })));
    return gone;
  }

  /** One step's trajectory records. */
  async readTrajectories(step: number): Promise<unknown[]> {
    const text = await readFile(this.trajectoryPath(step), 'utf8');
    return text
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as unknown);
  }

  /** Steps that have a trajectory file, ascending. */
  async trajectorySteps(): Promise<number[]> {
    return stepsIn(this.trajectoriesDir, /^step-(\d+)\.jsonl$/);
  }

  trajectoryPath(step: number): string {
    return join(this.trajectoriesDir, `${stepName(step)}.jsonl`);
  }

  /** Directory for the checkpoint taken after `stepsDone` steps (the trainer writes into it). */
  checkpointDir(stepsDone: number): string {
    return join(this.checkpointsDir, stepName(stepsDone));
  }

  /**
   * Mark the checkpoint after `stepsDone` steps complete, then delete all but the newest `keep`
   * complete checkpoints and any incomplete one older than it (left by a killed run).
   */
  async commitCheckpoint(stepsDone: number, keep: number): Promise<void> {
    await mkdir(this.checkpointDir(stepsDone), { recursive: true });
    await writeJsonAtomic(join(this.checkpointDir(stepsDone), CHECKPOINT_MARKER), {
      step: stepsDone,
      committed_at: new Date().toISOString(),
    });
    const all = await stepsIn(this.checkpointsDir, /^step-(\d+)$/);
    const complete = await this.completeCheckpoints();
    const kept = new Set(complete.slice(-Math.max(1, keep)));
    await Promise.all(
      all
        .filter((s) => s <= stepsDone && !kept.has(s))
        .map((s) => rm(this.checkpointDir(s), { recursive: true, force: true })),
    );
  }

  /** The newest complete checkpoint, for resume. */
  async latestCheckpoint(): Promise<{ readonly step: number; readonly dir: string } | undefined> {
    const complete = await this.completeCheckpoints();
    const step = complete[complete.length - 1];
    return step === undefined ? undefined : { step, dir: this.checkpointDir(step) };
  }

  /** Path of a log file in logs/, e.g. `logPath('trainer.log')`. */
  logPath(name: string): string {
    return join(this.logsDir, name);
  }

  /** Write summary.json (final figures) atomically. */
  async writeSummary(summary: Readonly<Record<string, unknown>>): Promise<void> {
    await writeJsonAtomic(this.paths.summary, summary);
  }

  /** summary.json, if the run wrote one. */
  async readSummary(): Promise<Record<string, unknown> | undefined> {
    const text = await readFile(this.paths.summary, 'utf8').catch(() => undefined);
    return text === undefined ? undefined : (JSON.parse(text) as Record<string, unknown>);
  }

  private async completeCheckpoints(): Promise<number[]> {
    const steps = await stepsIn(this.checkpointsDir, /^step-(\d+)$/);
    const marked = await Promise.all(
      steps.map((s) =>
        stat(join(this.checkpointDir(s), CHECKPOINT_MARKER)).then(
          () => true,
          () => false,
        ),
      ),
    );
    return steps.filter((_, i) => marked[i]);
  }

  private editManifest(edit: (manifest: Manifest) => Manifest): Promise<Manifest> {
    const next = this.manifestQueue.then(async () => {
      const updated = edit(await this.manifest());
      await writeJsonAtomic(this.paths.manifest, updated);
      return updated;
    });
    this.manifestQueue = next.catch(() => undefined);
    return next;
  }

  private enqueueMetrics<T>(task: () => Promise<T>): Promise<T> {
    const next = this.metricsQueue.then(task);
    this.metricsQueue = next.catch(() => undefined);
    return next;
  }
}

async function stepsIn(dir: string, pattern: RegExp): Promise<number[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  return names
    .map((n) => pattern.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
}

function mergeRecords(
  base: Readonly<Record<string, unknown>>,
  over: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const previous = out[key];
    out[key] = isRecord(previous) && isRecord(value) ? mergeRecords(previous, value) : value;
  }
  return out;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
