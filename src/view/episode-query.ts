/**
 * Episode summaries and the query the episodes view sends: filters, sort and one page. Pure functions
 * over summaries the run index keeps, so a list of 100 episodes or 100,000 costs the browser one page.
 */
import { conversationTurns } from '../ui/trajectory/conversation.js';
import type { TrajectoryRecord } from '../ui/trajectory/record.js';
import type { EpisodePage, EpisodeSummary } from './api-types.js';

/** Every filter the episodes view offers; all optional, combined with AND. */
export interface EpisodeQuery {
  /** `failed`: no success or a harness failure; `success`; `truncated`; `toolError`: at least one error result. */
  readonly only?: 'failed' | 'success' | 'truncated' | 'toolError';
  readonly rewardAbove?: number;
  readonly rewardBelow?: number;
  /** Exact task id. */
  readonly taskId?: string;
  /** Case-insensitive substring of the conversation text (matched against the file's lines). */
  readonly text?: string;
  readonly sort?: EpisodeSortKey;
  readonly descending?: boolean;
  readonly offset?: number;
  readonly limit?: number;
}

export const EPISODE_SORT_KEYS = [
  'index',
  'reward',
  'turns',
  'toolCalls',
  'toolErrors',
  'generatedTokens',
  'taskId',
] as const;
export type EpisodeSortKey = (typeof EPISODE_SORT_KEYS)[number];

export const DEFAULT_PAGE = 50;
export const MAX_PAGE = 500;

/** The summary of one recorded episode. */
export function summarizeEpisode(record: TrajectoryRecord, index: number): EpisodeSummary {
  const s = record.stats;
  return {
    index,
    step: record.step,
    group: record.group,
    sample: record.sample,
    taskId: record.task_id,
    reward: record.reward,
    rewardParts: record.reward_parts,
    success: record.success,
    failed: record.failed,
    truncated: s.truncated || record.finish_reason === 'maxTokens' || record.finish_reason === 'length',
    finishReason: record.finish_reason,
    turns: s.turns,
    toolCalls: s.toolCalls,
    toolErrors: s.toolErrors,
    generatedTokens: s.generatedTokens,
    promptTokens: s.promptTokens,
    advantage: record.advantage,
    answer: lastAssistantText(record.messages).slice(0, 160),
  };
}

/**
 * Filters, sorts and pages `episodes`. `textMatches` answers the text filter for an index (the caller
 * owns the episodes' text); it is only asked when the query has `text`.
 */
export function queryEpisodes(
  episodes: readonly EpisodeSummary[],
  query: EpisodeQuery,
  textMatches?: (index: number) => boolean,
): EpisodePage {
  const matched = episodes.filter(
    (e) => keep(e, query) && (query.text === undefined || query.text === '' || (textMatches?.(e.index) ?? false)),
  );
  const key = query.sort ?? 'index';
  const sign = query.descending ? -1 : 1;
  const sorted =
    key === 'index' && !query.descending
      ? matched
      : [...matched].sort((a, b) => sign * compare(a[key], b[key]) || a.index - b.index);
  const offset = Math.max(0, Math.floor(query.offset ?? 0));
  const limit = Math.min(MAX_PAGE, Math.max(1, Math.floor(query.limit ?? DEFAULT_PAGE)));
  return { total: episodes.length, matched: matched.length, offset, episodes: sorted.slice(offset, offset + limit) };
}

/**
 * Parses the query string of `/api/episodes` (`only`, `above`, `below`, `task`, `q`, `sort`, `desc`,
 * `offset`, `limit`); unknown values are ignored rather than refused, as a URL may be hand-edited.
 */
export function parseEpisodeQuery(params: URLSearchParams): EpisodeQuery {
  const num = (name: string): number | undefined => {
    const raw = params.get(name);
    const value = raw === null || raw === '' ? NaN : Number(raw);
    return Number.isFinite(value) ? value : undefined;
  };
  const only = params.get('only');
  const sort = params.get('sort');
  const query: { -readonly [K in keyof EpisodeQuery]: EpisodeQuery[K] } = {};
  if (only === 'failed' || only === 'success' || only === 'truncated' || only === 'toolError') query.only = only;
  if (num('above') !== undefined) query.rewardAbove = num('above');
  if (num('below') !== undefined) query.rewardBelow = num('below');
  if (params.get('task')) query.taskId = params.get('task')!;
  if (params.get('q')) query.text = params.get('q')!;
  if (sort && (EPISODE_SORT_KEYS as readonly string[]).includes(sort)) query.sort = sort as EpisodeSortKey;
  if (params.get('desc') === '1') query.descending = true;
  if (num('offset') !== undefined) query.offset = num('offset');
  if (num('limit') !== undefined) query.limit = num('limit');
  return query;
}

function keep(e: EpisodeSummary, q: EpisodeQuery): boolean {
  if (q.only === 'failed' && e.success && !e.failed) return false;
  if (q.only === 'success' && (!e.success || e.failed)) return false;
  if (q.only === 'truncated' && !e.truncated) return false;
  if (q.only === 'toolError' && e.toolErrors === 0) return false;
  if (q.rewardAbove !== undefined && !(e.reward > q.rewardAbove)) return false;
  if (q.rewardBelow !== undefined && !(e.reward < q.rewardBelow)) return false;
  if (q.taskId !== undefined && e.taskId !== q.taskId) return false;
  return true;
}

function compare(a: number | string, b: number | string): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a).localeCompare(String(b));
}

function lastAssistantText(messages: readonly unknown[]): string {
  const turns = conversationTurns(messages);
  for (let i = turns.length - 1; i >= 0; i--) {
    const turn = turns[i]!;
    if (turn.role !== 'assistant') continue;
    const text = turn.parts
      .flatMap((p) =>
        p.kind === 'text' ? [p.text] : p.kind === 'toolCall' ? [`→ ${p.name}(${JSON.stringify(p.input)})`] : [],
      )
      .join(' ');
    if (text.trim()) return text.trim();
  }
  return '';
}
