/** Finding runs and summarising them: what `atk runs ls` and `atk runs show` print. */
import { readdir, readFile, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { InputError } from '../errors/index.js';
import { closestName } from '../util/did-you-mean.js';
import type { Manifest, RunStatus } from './manifest.js';
import { readMetricsTail, type MetricsLine } from './metrics.js';
import { openRunDir, type RunDir } from './run-dir.js';
import { listVersions, readLatest } from './versions.js';

/** One run's headline figures. */
export interface RunOverview {
  readonly name: string;
  readonly version: string;
  readonly dir: string;
  /** `stale` is a run still marked running whose process on this host is gone. */
  readonly status: RunStatus | 'stale';
  readonly startedAt: string;
  readonly finishedAt: string | undefined;
  /** Seconds from start to finish, or to now while running. */
  readonly durationS: number;
  /** Training steps recorded in metrics.jsonl. */
  readonly stepsDone: number;
  /** `train.steps` of resolved.yaml. */
  readonly stepsTotal: number | undefined;
  /** reward_mean of the last training step. */
  readonly lastReward: number | undefined;
}

/** Every run under `runsDir`, by name then version. Directories without a manifest are skipped. */
export async function listRuns(runsDir: string): Promise<RunOverview[]> {
  const names = (await readdir(runsDir, { withFileTypes: true }).catch(() => []))
    .filter((e) => e.isDirectory() && !e.name.startsWith('.'))
    .map((e) => e.name)
    .sort();
  const out: RunOverview[] = [];
  for (const name of names) {
    for (const version of await listVersions(join(runsDir, name))) {
      const run = await openRunDir(join(runsDir, name, version)).catch(() => undefined);
      if (run) out.push(await overview(run));
    }
  }
  return out;
}

/** Lines read from the end of metrics.jsonl for the newest training line (evals come one at a time between steps). */
const TAIL_LINES = 16;

/** Headline figures of one run, from the newest training line (read from the file's end). */
export async function overview(run: RunDir): Promise<RunOverview> {
  const [manifest, tail, stepsTotal] = await Promise.all([
    run.manifest(),
    readMetricsTail(run.paths.metrics, TAIL_LINES),
    totalSteps(run),
  ]);
  const isTrain = (m: MetricsLine): boolean => m.kind === 'train' || m.kind === undefined;
  let last = tail.filter(isTrain).at(-1);
  if (!last && tail.length === TAIL_LINES) last = (await run.readMetrics()).filter(isTrain).at(-1);
  const end = manifest.finished_at ?? (manifest.status === 'running' ? new Date().toISOString() : manifest.updated_at);
  return {
    name: manifest.name,
    version: manifest.version,
    dir: run.dir,
    status: manifest.status === 'running' && processGone(manifest) ? 'stale' : manifest.status,
    startedAt: manifest.started_at,
    finishedAt: manifest.finished_at,
    durationS: Math.max(0, (Date.parse(end) - Date.parse(manifest.started_at)) / 1000),
    // Steps only grow along the file (a resume rewrites it without the steps it redoes); a line without one counts none.
    stepsDone: last ? Math.max(0, stepOf(last)) : 0,
    stepsTotal,
    lastReward: typeof last?.reward_mean === 'number' ? last.reward_mean : undefined,
  };
}

/**
 * The run a user names: a run directory path, `name` (its highest version), `name/v002` or
 * `name/latest`, looked up under `runsDir`.
 * @throws InputError naming the nearest run when there is none.
 */
export async function findRun(ref: string, runsDir: string): Promise<RunDir> {
  for (const dir of [ref, join(runsDir, ref)]) if (await isFile(join(dir, 'manifest.json'))) return openRunDir(dir);
  const [name, version] = splitRef(ref);
  const nameDir = (await isDir(name)) ? resolve(name) : resolve(runsDir, name);
  const versions = await listVersions(nameDir);
  if (versions.length === 0) {
    const names = (await readdir(runsDir).catch(() => [] as string[])).filter((n) => !n.startsWith('.'));
    const near = closestName(name, names);
    throw new InputError(`no run '${ref}' in ${runsDir}${near ? ` (did you mean '${near}'?)` : ''}`, {
      hint: 'atk runs ls lists the runs',
    });
  }
  const chosen =
    version === undefined
      ? versions[versions.length - 1]!
      : version === 'latest'
        ? ((await readLatest(nameDir)) ?? versions[versions.length - 1]!)
        : version;
  if (!versions.includes(chosen)) {
    throw new InputError(`run '${name}' has no version ${chosen}; it has ${versions.join(', ')}`, {
      hint: 'atk runs ls lists the runs',
    });
  }
  return openRunDir(join(nameDir, chosen));
}

function splitRef(ref: string): [string, string | undefined] {
  const parts = ref.split('/').filter(Boolean);
  // An absolute path keeps its leading slash, which dropping the empty parts would lose.
  const root = ref.startsWith('/') ? '/' : '';
  const last = parts[parts.length - 1] ?? '';
  if (parts.length >= 2 && (/^v\d{3,}$/.test(last) || last === 'latest'))
    return [root + parts.slice(0, -1).join('/'), last];
  return [root + parts.join('/'), undefined];
}

async function totalSteps(run: RunDir): Promise<number | undefined> {
  const text = await readFile(run.paths.resolved, 'utf8').catch(() => undefined);
  const steps: unknown =
    text === undefined ? undefined : (parse(text) as { train?: { steps?: unknown } } | null)?.train?.steps;
  return typeof steps === 'number' ? steps : undefined;
}

function stepOf(line: MetricsLine): number {
  return typeof line.step === 'number' ? line.step : -1;
}

/** A running run on this host whose process no longer exists. */
export function processGone(manifest: Manifest): boolean {
  if (manifest.host.hostname !== hostname()) return false;
  try {
    process.kill(manifest.pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

async function isFile(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isFile() ?? false;
}

async function isDir(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isDirectory() ?? false;
}
