/**
 * The viewer's JSON API, one function per route, over the run catalog. Every answer is computed on
 * the server from indexes (the browser never reads a whole trajectory file) and paged where it grows
 * with the run.
 */
import { readFile } from 'node:fs/promises';
import type { MetricsLine } from '../runs/index.js';
import { ToolUseCounter } from '../ui/report/tool-use.js';
import { conversationTurns } from '../ui/trajectory/conversation.js';
import { parseTrajectoryLine, type TrajectoryRecord } from '../ui/trajectory/record.js';
import type { ApiAnswers, ApiError, ApiRoute, MetricColumns } from './api-types.js';
import { episodesContaining, readEpisode } from './episode-file.js';
import { parseEpisodeQuery, queryEpisodes } from './episode-query.js';
import type { EpisodeTokenViews } from './episode-tokens.js';
import type { RunCatalog } from './run-catalog.js';
import type { EpisodeSource, RunIndex } from './run-index.js';

/** An answer: a status and a JSON body (`ApiAnswers[route]`, or an `ApiError`). */
export interface ApiAnswer {
  readonly status: number;
  readonly body: ApiAnswers[ApiRoute] | ApiError;
}

/** Answers `GET /api/<route>?<params>`. */
export async function answerApi(
  route: string,
  params: URLSearchParams,
  catalog: RunCatalog,
  tokens: EpisodeTokenViews,
): Promise<ApiAnswer> {
  if (route === 'runs') return ok({ runs: catalog.list().map((r) => r.row()) } satisfies ApiAnswers['runs']);
  const run = catalog.get(params.get('run') ?? '');
  if (!run) return notFound(`no run '${params.get('run') ?? ''}'`);
  const answer = Object.hasOwn(RUN_ROUTES, route) ? RUN_ROUTES[route as keyof typeof RUN_ROUTES] : undefined;
  if (!answer) return notFound(`no route /api/${route}`);
  try {
    return ok(await answer(run, params, tokens));
  } catch (error) {
    if (error instanceof NotFound) return notFound(error.message);
    throw error;
  }
}

/** The routes about one run (`?run=<id>`), each typed with the answer the browser reads. */
const RUN_ROUTES: {
  readonly [R in Exclude<ApiRoute, 'runs'>]: (
    run: RunIndex,
    params: URLSearchParams,
    tokens: EpisodeTokenViews,
  ) => Promise<ApiAnswers[R]>;
} = {
  metrics: async (run) => ({
    run: run.row(),
    train: metricColumns(run.metrics.train),
    evals: run.metrics.evals,
  }),
  sources: async (run) => ({ run: run.row(), sources: run.sources.map(({ id, kind, step }) => ({ id, kind, step })) }),
  episodes: async (run, params) => {
    const source = sourceOf(run, params);
    const index = (await run.episodes(source.id))!;
    const query = parseEpisodeQuery(params);
    const hits = query.text ? await episodesContaining(index, query.text) : undefined;
    return { source: source.id, ...queryEpisodes(index.episodes, query, (i) => hits?.has(i) ?? false) };
  },
  episode: async (run, params) => {
    const { source, record } = await episodeOf(run, params);
    const { trajectory: _tokens, ...rest } = record;
    return { source: source.id, record: rest, turns: conversationTurns(record.messages) };
  },
  tokens: async (run, params, tokens) => tokens.view(run.dir, (await episodeOf(run, params)).record),
  task: (run, params) => taskAcrossSteps(run, params.get('task') ?? ''),
  tools: (run, params) => toolUse(sourceOf(run, params)),
};

/** Columns of every numeric figure of the training lines. */
export function metricColumns(lines: readonly MetricsLine[]): MetricColumns {
  const keys = new Set<string>();
  for (const line of lines)
    for (const [k, v] of Object.entries(line)) if (typeof v === 'number' && k !== 'step') keys.add(k);
  const series: Record<string, (number | null)[]> = {};
  for (const key of keys) series[key] = lines.map((l) => (typeof l[key] === 'number' ? (l[key] as number) : null));
  return { steps: lines.map((l) => (typeof l.step === 'number' ? l.step : 0)), series };
}

const FILES_AT_ONCE = 8;

/** Every recorded episode of one task, training steps first, then evals, for a side-by-side view. */
async function taskAcrossSteps(run: RunIndex, taskId: string): Promise<ApiAnswers['task']> {
  const episodes: ApiAnswers['task']['episodes'][number][] = [];
  // A few files at a time: reading one overlaps searching another.
  for (let i = 0; i < run.sources.length; i += FILES_AT_ONCE) {
    const batch = run.sources.slice(i, i + FILES_AT_ONCE);
    const found = await Promise.all(batch.map((source) => run.taskEpisodes(source, taskId)));
    batch.forEach((source, k) => {
      for (const e of found[k]!) episodes.push({ ...e, source: source.id });
    });
  }
  return { taskId, episodes };
}

async function toolUse(source: EpisodeSource): Promise<ApiAnswers['tools']> {
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

/** The source `?source=` names. @throws NotFound when the run has none of that name. */
function sourceOf(run: RunIndex, params: URLSearchParams): EpisodeSource {
  const source = run.sources.find((s) => s.id === params.get('source'));
  if (!source) throw new NotFound(`run ${run.id} has no episodes '${params.get('source') ?? ''}'`);
  return source;
}

/** The episode `?source=&index=` names. @throws NotFound when there is no such source or episode. */
async function episodeOf(
  run: RunIndex,
  params: URLSearchParams,
): Promise<{ source: EpisodeSource; record: TrajectoryRecord }> {
  const source = sourceOf(run, params);
  const index = await run.episodes(source.id);
  const record = index ? await readEpisode(index, Number(params.get('index'))) : undefined;
  if (!record) throw new NotFound(`${source.id} has no episode ${params.get('index') ?? ''}`);
  return { source, record };
}

class NotFound extends Error {}

function ok(body: ApiAnswers[ApiRoute]): ApiAnswer {
  return { status: 200, body };
}

function notFound(message: string): ApiAnswer {
  return { status: 404, body: { error: message } };
}
