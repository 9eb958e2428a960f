import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { MetricsLine } from '../../runs/index.js';
import { openRunDir, readMetricsFile } from '../../runs/index.js';
import { readTrajectoryFile, type TrajectoryRecord } from '../trajectory/record.js';
import { selectEpisode } from '../trajectory/select.js';
import { trajectorySteps, stepFilePath } from '../trajectory/source.js';
import { ToolUseCounter, type ToolUseStats } from './tool-use.js';

/** What a report shows, read from a run directory. */
export interface RunReportData {
  readonly dir: string;
  readonly name: string;
  readonly version: string;
  readonly status: string;
  readonly startedAt: string;
  readonly finishedAt: string | undefined;
  readonly train: readonly MetricsLine[];
  readonly evals: readonly MetricsLine[];
  readonly toolUse: ToolUseStats;
  /** Steps whose trajectories the tool-use figures cover. */
  readonly toolUseSteps: readonly number[];
  /** Best, worst and first failed episode of the newest trajectories (an eval's when there are none). */
  readonly samples: readonly { readonly label: string; readonly source: string; readonly record: TrajectoryRecord }[];
}

/**
 * Read a run's manifest, metrics and trajectories for a report. Tool use is counted over every
 * trajectory file (one file in memory at a time).
 * @throws InputError when the directory is not a run directory.
 */
export async function readRunReportData(dir: string): Promise<RunReportData> {
  const run = await openRunDir(dir);
  const manifest = await run.manifest();
  const metrics = await readMetricsFile(run.paths.metrics);
  const steps = await trajectorySteps(run.trajectoriesDir);
  const counter = new ToolUseCounter();
  let newest: { file: string; records: TrajectoryRecord[] } | undefined;
  for (const step of steps) {
    const file = stepFilePath(run.trajectoriesDir, step);
    const records = (await readTrajectoryFile(file)).map((l) => l.record);
    for (const record of records) counter.add(record);
    newest = { file, records };
  }
  newest ??= await newestEvalResults(run.evalDir, metrics);
  return {
    dir: run.dir,
    name: manifest.name,
    version: manifest.version,
    status: manifest.status,
    startedAt: manifest.started_at,
    finishedAt: manifest.finished_at,
    train: metrics.filter((m) => m.kind === 'train' || m.kind === undefined),
    evals: metrics.filter((m) => m.kind === 'eval'),
    toolUse: counter.stats(),
    toolUseSteps: steps,
    samples: newest ? samplesOf(newest.file, newest.records) : [],
  };
}

function samplesOf(file: string, records: readonly TrajectoryRecord[]): RunReportData['samples'] {
  if (records.length === 0) return [];
  const picks: { label: string; source: string; record: TrajectoryRecord; index: number }[] = [];
  for (const kind of ['best', 'worst', 'failed'] as const) {
    if (kind === 'failed' && !records.some((r) => r.failed || !r.success)) continue;
    const { index, record } = selectEpisode(records, { kind }, file);
    const same = picks.find((p) => p.index === index);
    if (same) same.label += `, ${kind}`;
    else picks.push({ label: kind, source: `${file} episode ${index}`, record, index });
  }
  return picks.map(({ label, source, record }) => ({ label, source, record }));
}

async function newestEvalResults(
  evalDir: string,
  metrics: readonly MetricsLine[],
): Promise<{ file: string; records: TrajectoryRecord[] } | undefined> {
  for (const line of [...metrics].reverse()) {
    if (line.kind !== 'eval' || typeof line.label !== 'string') continue;
    const file = join(evalDir, line.label, 'results.jsonl');
    const exists = await readFile(file).then(
      () => true,
      () => false,
    );
    if (exists) return { file, records: (await readTrajectoryFile(file)).map((l) => l.record) };
  }
  return undefined;
}
