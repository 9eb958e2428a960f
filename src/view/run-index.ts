/**
 * What the viewer knows about one run directory, kept current by `refresh()`: the manifest, a digest
 * of the metrics read incrementally (metrics.jsonl is append-only, so only new bytes are read, a chunk
 * at a time), the list of episode files (training steps and evals) and, on demand, an index of each
 * file (the most recently used ones are kept).
 */
import { open, readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { processGone, type Manifest, type MetricsLine } from '../runs/index.js';
import type { EpisodeSummary, RunRow } from './api-types.js';
import { indexEpisodeFile, isCurrent, taskEpisodes, type EpisodeFileIndex } from './episode-file.js';
import { MetricsDigest } from './metrics-digest.js';

/** A file of episodes: `step-NNNNN` (training) or `eval/<label>`. */
export interface EpisodeSource {
  readonly id: string;
  readonly kind: 'train' | 'eval';
  readonly step: number;
  readonly file: string;
}

const STEP_FILE = /^step-(\d+)\.jsonl$/;
/** Episode file indexes kept per run: a page of episodes or an episode opens from memory, a run of 10,000 steps does not fill it. */
const FILE_INDEXES_KEPT = 64;
/** Bytes of metrics.jsonl read at a time. */
const METRICS_CHUNK = 1 << 22;
const TRAIN_LINE_HEAD = /^\{"kind":"train","step":(\d+),/;
const REWARD_MEAN_KEY = '"reward_mean":';

export class RunIndex {
  private manifestStamp = '';
  private manifestData: Manifest | undefined;
  private stepsTotal: number | null = null;
  private metricsOffset = 0;
  private digestData = new MetricsDigest();
  private sourceList: EpisodeSource[] = [];
  private readonly files = new Map<string, EpisodeFileIndex>();

  constructor(
    readonly id: string,
    readonly dir: string,
  ) {}

  /**
   * Re-reads what changed since the last call; returns whether anything did.
   * @throws Error when manifest.json cannot be read at all (not a run directory).
   */
  async refresh(): Promise<boolean> {
    const [manifestChanged, metricsChanged, sourcesChanged] = await Promise.all([
      this.refreshManifest(),
      this.refreshMetrics(),
      this.refreshSources(),
    ]);
    return manifestChanged || metricsChanged || sourcesChanged;
  }

  get manifest(): Manifest {
    if (!this.manifestData) throw new Error(`${this.dir}: refresh() first`);
    return this.manifestData;
  }

  /** The metrics so far: every eval, training lines thinned to a chart's worth, the headline figures. */
  get metrics(): MetricsDigest {
    return this.digestData;
  }

  get sources(): readonly EpisodeSource[] {
    return this.sourceList;
  }

  /** The headline row of the runs table. */
  row(): RunRow {
    const m = this.manifest;
    const digest = this.digestData;
    const evals = digest.evals;
    const end = m.finished_at ?? (m.status === 'running' ? new Date().toISOString() : m.updated_at);
    const evalFigure = (l: MetricsLine | undefined): RunRow['evalBefore'] =>
      l
        ? {
            label: String(l.label ?? `step-${l.step ?? '?'}`),
            accuracy: typeof l.accuracy === 'number' ? l.accuracy : null,
          }
        : null;
    return {
      id: this.id,
      name: m.name,
      version: m.version,
      dir: this.dir,
      status: m.status === 'running' && processGone(m) ? 'stale' : m.status,
      startedAt: m.started_at,
      finishedAt: m.finished_at ?? null,
      durationS: Math.max(0, (Date.parse(end) - Date.parse(m.started_at)) / 1000),
      stepsDone: digest.stepsDone,
      stepsTotal: this.stepsTotal,
      lastReward: digest.lastReward,
      bestReward: digest.bestReward,
      evalBefore: evalFigure(evals[0]),
      evalAfter: evalFigure(evals[evals.length - 1]),
      dataset:
        typeof (m.dataset as { name?: unknown } | undefined)?.name === 'string'
          ? (m.dataset as { name: string }).name
          : null,
      engine: typeof m.engine === 'string' ? m.engine : null,
    };
  }

  /** The index of a source's file, rebuilt when the file changed; undefined for an unknown source. */
  async episodes(sourceId: string): Promise<EpisodeFileIndex | undefined> {
    const source = this.sourceList.find((s) => s.id === sourceId);
    if (!source) return undefined;
    const cached = this.files.get(sourceId);
    if (cached && (await isCurrent(cached))) return cached;
    const fresh = await indexEpisodeFile(source.file);
    this.files.delete(sourceId);
    this.files.set(sourceId, fresh);
    // A Map iterates in insertion order: the first key is the least recently indexed.
    if (this.files.size > FILE_INDEXES_KEPT) this.files.delete(this.files.keys().next().value!);
    return fresh;
  }

  /**
   * One task's episodes in a source: from the source's index when one is current, else by searching the
   * file for the task (see taskEpisodes), which neither indexes the file nor keeps anything.
   */
  async taskEpisodes(source: EpisodeSource, taskId: string): Promise<EpisodeSummary[]> {
    const cached = this.files.get(source.id);
    if (cached && (await isCurrent(cached))) return cached.episodes.filter((e) => e.taskId === taskId);
    return taskEpisodes(source.file, taskId);
  }

  private async refreshManifest(): Promise<boolean> {
    const file = join(this.dir, 'manifest.json');
    const info = await stat(file);
    const stamp = `${info.size}:${info.mtimeMs}`;
    if (stamp === this.manifestStamp) return false;
    // Written atomically (rename), so a read never sees half a file.
    this.manifestData = JSON.parse(await readFile(file, 'utf8')) as Manifest;
    this.manifestStamp = stamp;
    const resolved = await readFile(join(this.dir, 'resolved.yaml'), 'utf8').catch(() => undefined);
    const steps: unknown =
      resolved === undefined ? undefined : (parse(resolved) as { train?: { steps?: unknown } } | null)?.train?.steps;
    this.stepsTotal = typeof steps === 'number' ? steps : null;
    return true;
  }

  /** Reads the bytes appended since last time, a chunk at a time; a partial last line waits for its newline. */
  private async refreshMetrics(): Promise<boolean> {
    const file = join(this.dir, 'metrics.jsonl');
    const info = await stat(file).catch(() => undefined);
    if (!info) return false;
    // `--resume` rewrites the file shorter (it drops steps it will redo): start again.
    if (info.size < this.metricsOffset) {
      this.metricsOffset = 0;
      this.digestData = new MetricsDigest();
    }
    if (info.size === this.metricsOffset) return false;
    const handle = await open(file, 'r');
    const start = this.metricsOffset;
    try {
      // Bytes after the last newline read so far (a line that goes on in the next chunk); kept as bytes, since a
      // chunk may end inside a character.
      let carry = Buffer.alloc(0);
      const chunk = Buffer.alloc(Math.min(METRICS_CHUNK, info.size - start));
      for (let position = start; position < info.size; ) {
        const { bytesRead } = await handle.read(chunk, 0, Math.min(chunk.length, info.size - position), position);
        if (bytesRead === 0) break;
        position += bytesRead;
        const read = chunk.subarray(0, bytesRead);
        const end = read.lastIndexOf(10);
        if (end === -1) {
          carry = Buffer.concat([carry, read]);
          continue;
        }
        const text = Buffer.concat([carry, read.subarray(0, end)]).toString('utf8');
        carry = Buffer.from(read.subarray(end + 1));
        this.metricsOffset = position - carry.length;
        for (const line of text.split('\n')) this.addMetricsLine(line);
      }
    } finally {
      await handle.close();
    }
    return this.metricsOffset !== start;
  }

  private addMetricsLine(line: string): void {
    if (line === '') return;
    // The run loop writes kind and step first: a training line the chart will not keep is not parsed.
    const head = TRAIN_LINE_HEAD.exec(line);
    if (head && !this.digestData.wants(Number(head[1]))) {
      this.digestData.addThinned(Number(head[1]), rewardMeanOf(line), line);
      return;
    }
    try {
      const value: unknown = JSON.parse(line);
      if (value !== null && typeof value === 'object' && !Array.isArray(value))
        this.digestData.add(value as MetricsLine);
    } catch {
      // A line torn by a crash and then appended to; the lines after it are still good.
    }
  }

  private async refreshSources(): Promise<boolean> {
    const steps = (await readdir(join(this.dir, 'trajectories')).catch(() => [] as string[])).flatMap((name) => {
      const match = STEP_FILE.exec(name);
      return match
        ? [
            {
              id: name.slice(0, -'.jsonl'.length),
              kind: 'train' as const,
              step: Number(match[1]),
              file: join(this.dir, 'trajectories', name),
            },
          ]
        : [];
    });
    const labels = await readdir(join(this.dir, 'eval'), { withFileTypes: true }).catch(() => []);
    const evals: EpisodeSource[] = [];
    for (const entry of labels) {
      if (!entry.isDirectory()) continue;
      const file = join(this.dir, 'eval', entry.name, 'results.jsonl');
      if (!(await stat(file).catch(() => undefined))?.isFile()) continue;
      const step = /(\d+)$/.exec(entry.name);
      evals.push({ id: `eval/${entry.name}`, kind: 'eval', step: step ? Number(step[1]) : 0, file });
    }
    const next = [
      ...steps.sort((a, b) => a.step - b.step),
      ...evals.sort((a, b) => a.step - b.step || a.id.localeCompare(b.id)),
    ];
    const changed = next.length !== this.sourceList.length || next.some((s, i) => s.id !== this.sourceList[i]!.id);
    this.sourceList = next;
    return changed;
  }
}

/** A metrics line's top-level reward_mean, read off its text (the lines are flat objects). */
function rewardMeanOf(line: string): number | undefined {
  const at = line.indexOf(REWARD_MEAN_KEY);
  if (at === -1) return undefined;
  const value = Number.parseFloat(line.slice(at + REWARD_MEAN_KEY.length, at + REWARD_MEAN_KEY.length + 32));
  return Number.isFinite(value) ? value : undefined;
}
