/**
 * The viewer's JSON API, one function per route, over the run catalog. Every answer is computed on
 * the server from indexes (the browser never reads a whole trajectory file) and paged where it grows
 * with the run.
 */
import { readFile } from 'node:fs/promises';
import type { MetricsLine } from '../runs/index.js';
import { ToolUseCounter, type ToolUseStats } from '../ui/report/tool-use.js';
import { conversationTurns } from '../ui/trajectory/conversation.js';
import { parseTrajectoryLine, type TrajectoryRecord } from '../ui/trajectory/record.js';
import { episodesContaining, readEpisode } from './episode-file.js';
import { parseEpisodeQuery, queryEpisodes, type EpisodePage, type EpisodeSummary } from './episode-query.js';
import type { EpisodeTokenViews, EpisodeTokens } from './episode-tokens.js';
import type { RunCatalog } from './run-catalog.js';
import type { EpisodeSource, RunIndex, RunRow } from './run-index.js';

/** An answer: a status and a JSON body. */
export interface ApiAnswer {
  readonly status: number;
  readonly body: unknown;
}

/** Training metrics as columns (one array per figure, aligned with `steps`): a 1,000-step run is one small answer. */
export interface MetricColumns {
  readonly steps: readonly number[];
  readonly series: Readonly<Record<string, readonly (number | null)[]>>;
}

/** Answers `GET /api/<route>?<params>`. */
export async function answerApi(
  route: string,
  params: URLSearchParams,
  catalog: RunCatalog,
  tokens: EpisodeTokenViews,
): Promise<ApiAnswer> {
  if (route === 'runs') return ok({ runs: catalog.list().map((r): RunRow => r.row()) });
  const run = catalog.get(params.get('run') ?? '');
  if (!run) return notFound(`no run '${params.get('run') ?? ''}'`);
  switch (route) {
    case 'metrics':
      return ok({
        run: run.row(),
        train: metricColumns(run.metrics.filter((l) => l.kind === 'train' || l.kind === undefined)),
        evals: run.metrics.filter((l) => l.kind === 'eval'),
      });
    case 'sources':
      return ok({ run: run.row(), sources: run.sources.map(({ id, kind, step }) => ({ id, kind, step })) });
    case 'episodes':
      return withSource(run, params, async (source) => ({
        source: source.id,
        ...(await episodePage(run, source, params)),
      }));
    case 'episode':
      return withEpisode(run, params, async (record, source) => {
        const { trajectory: _tokens, ...rest } = record;
        return { source: source.id, record: rest, turns: conversationTurns(record.messages) };
      });
    case 'tokens':
      return withEpisode(run, params, (record): Promise<EpisodeTokens> => tokens.view(run.dir, record));
    case 'task':
      return ok(await taskAcrossSteps(run, params.get('task') ?? ''));
    case 'tools':
      return withSource(run, params, (source) => toolUse(source));
    default:
      return notFound(`no route /api/${route}`);
  }
}

/** Columns of every numeric figure of the training lines. */
export function metricColumns(lines: readonly MetricsLine[]): MetricColumns {
  const keys = new Set<string>();
  for (const line of lines)
    for (const [k, v] of Object.entries(line)) if (typeof v === 'number' && k !== 'step') keys.add(k);
  const series: Record<string, (number | null)[]> = {};
  for (const key of keys) series[key] = lines.map((l) => (typeof l[key] === 'number' ? (l[key] as number) : null));
  return { steps: lines.map((l) => (typeof l.step === 'number' ? l.step : 0)), series };
}

async function episodePage(run: RunIndex, source: EpisodeSource, params: URLSearchParams): Promise<EpisodePage> {
  const index = (await run.episodes(source.id))!;
  const query = parseEpisodeQuery(params);
  const hits = query.text ? await episodesContaining(index, query.text) : undefined;
  return queryEpisodes(index.episodes, query, (i) => hits?.has(i) ?? false);
}

/** Every recorded episode of one task, training steps first, then evals, for a side-by-side view. */
async function taskAcrossSteps(
  run: RunIndex,
  taskId: string,
): Promise<{ taskId: string; episodes: (EpisodeSummary & { source: string })[] }> {
  const episodes: (EpisodeSummary & { source: string })[] = [];
  for (const source of run.sources) {
    const index = await run.episodes(source.id);
    for (const e of index?.episodes ?? []) if (e.taskId === taskId) episodes.push({ ...e, source: source.id });
  }
  return { taskId, episodes };
}

async function toolUse(source: EpisodeSource): Promise<ToolUseStats> {
  const counter = new ToolUseCounter();
  const text = await readFile(source.file, 'utf8');
  for (const [i, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    try {
      counter.add(parseTrajectoryLine(line, `${source.file}:${i + 1}`));
    } catch {
      // The episodes view skips unreadable lines too.
    }
  }
  return counter.stats();
}

async function withSource(
  run: RunIndex,
  params: URLSearchParams,
  answer: (source: EpisodeSource) => Promise<unknown>,
): Promise<ApiAnswer> {
  const source = run.sources.find((s) => s.id === params.get('source'));
  if (!source) return notFound(`run ${run.id} has no episodes '${params.get('source') ?? ''}'`);
  return ok(await answer(source));
}

async function withEpisode(
  run: RunIndex,
  params: URLSearchParams,
  answer: (record: TrajectoryRecord, source: EpisodeSource) => Promise<unknown>,
): Promise<ApiAnswer> {
  return withSource(run, params, async (source) => {
    const index = await run.episodes(source.id);
    const record = index ? await readEpisode(index, Number(params.get('index'))) : undefined;
    if (!record) throw new NotFound(`${source.id} has no episode ${params.get('index') ?? ''}`);
    return answer(record, source);
  }).catch((error: unknown) => {
    if (error instanceof NotFound) return notFound(error.message);
    throw error;
  });
}

class NotFound extends Error {}

function ok(body: unknown): ApiAnswer {
  return { status: 200, body };
}

function notFound(message: string): ApiAnswer {
  return { status: 404, body: { error: message } };
}
