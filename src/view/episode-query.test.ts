import { describe, expect, test } from 'vitest';
import type { EpisodeSummary } from './api-types.js';
import { MAX_PAGE, parseEpisodeQuery, queryEpisodes } from './episode-query.js';

function episode(index: number, facts: Partial<EpisodeSummary> = {}): EpisodeSummary {
  return {
    index,
    step: 1,
    group: Math.floor(index / 4),
    sample: index % 4,
    taskId: `t${index % 7}`,
    reward: (index % 10) / 10,
    rewardParts: {},
    success: index % 3 !== 0,
    failed: false,
    truncated: index % 5 === 0,
    finishReason: 'endTurn',
    turns: 2,
    toolCalls: 1,
    toolErrors: index % 4 === 0 ? 1 : 0,
    generatedTokens: 100 - (index % 50),
    promptTokens: 40,
    advantage: null,
    answer: '',
    ...facts,
  };
}

const MANY = Array.from({ length: 100_000 }, (_, i) => episode(i));

describe('queryEpisodes', () => {
  test('returns one page of a large list, with the counts before paging', () => {
    const page = queryEpisodes(MANY, { offset: 99_990, limit: 50 });
    expect([page.total, page.matched, page.offset, page.episodes.map((e) => e.index)]).toStrictEqual([
      100_000,
      100_000,
      99_990,
      [99_990, 99_991, 99_992, 99_993, 99_994, 99_995, 99_996, 99_997, 99_998, 99_999],
    ]);
    expect(queryEpisodes(MANY, { limit: 10_000 }).episodes.length).toBe(MAX_PAGE);
  });

  test('returns the episodes every filter keeps, combined with AND', () => {
    const few = MANY.slice(0, 30);
    const failed = queryEpisodes(few, { only: 'failed' }).episodes.map((e) => e.index);
    expect(failed).toStrictEqual([0, 3, 6, 9, 12, 15, 18, 21, 24, 27]);
    expect(
      queryEpisodes(few, { only: 'failed', rewardAbove: 0.5, taskId: 't2' }).episodes.map((e) => e.index),
    ).toStrictEqual([9]);
    expect(queryEpisodes(few, { only: 'truncated', rewardBelow: 0.1 }).episodes.map((e) => e.index)).toStrictEqual([
      0, 10, 20,
    ]);
    expect(queryEpisodes(few, { only: 'toolError' }).matched).toBe(8);
    expect(queryEpisodes(few, { text: 'x' }, (i) => i === 4 || i === 17).episodes.map((e) => e.index)).toStrictEqual([
      4, 17,
    ]);
  });

  test('returns episodes sorted by a column, ties in file order', () => {
    const few = MANY.slice(0, 12);
    expect(
      queryEpisodes(few, { sort: 'reward', descending: true, limit: 4 }).episodes.map((e) => [e.index, e.reward]),
    ).toStrictEqual([
      [9, 0.9],
      [8, 0.8],
      [7, 0.7],
      [6, 0.6],
    ]);
    expect(queryEpisodes(few, { sort: 'taskId', limit: 4 }).episodes.map((e) => e.index)).toStrictEqual([0, 7, 1, 8]);
  });
});

describe('parseEpisodeQuery', () => {
  test('returns the query a URL names, ignoring values it cannot use', () => {
    expect(
      parseEpisodeQuery(
        new URLSearchParams('only=failed&above=0.5&below=&task=t1&q=abacus&sort=reward&desc=1&offset=50&limit=20'),
      ),
    ).toStrictEqual({
      only: 'failed',
      rewardAbove: 0.5,
      taskId: 't1',
      text: 'abacus',
      sort: 'reward',
      descending: true,
      offset: 50,
      limit: 20,
    });
    expect(parseEpisodeQuery(new URLSearchParams('only=everything&sort=__proto__&above=abc'))).toStrictEqual({});
  });
});
