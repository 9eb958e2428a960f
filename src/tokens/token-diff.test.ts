import { describe, expect, test } from 'vitest';
import { diffTokens } from './token-diff.js';

describe('diffTokens', () => {
  test('returns no hunks for equal sequences', () => {
    expect(diffTokens([1, 2, 3], [1, 2, 3])).toStrictEqual([]);
  });

  test('returns each replaced, deleted and inserted region as its own hunk', () => {
    expect(diffTokens([1, 2, 3, 4, 5, 6, 7], [1, 9, 3, 4, 6, 7, 8])).toStrictEqual([
      { aStart: 1, aEnd: 2, bStart: 1, bEnd: 2 },
      { aStart: 4, aEnd: 5, bStart: 4, bEnd: 4 },
      { aStart: 7, aEnd: 7, bStart: 6, bEnd: 7 },
    ]);
  });

  test('returns one hunk for a split token (one id became two)', () => {
    expect(diffTokens([5, 100, 6], [5, 1, 2, 6])).toStrictEqual([{ aStart: 1, aEnd: 2, bStart: 1, bEnd: 3 }]);
  });

  test('returns the whole middle as one hunk past the edit limit', () => {
    expect(diffTokens([0, 1, 2, 3, 0], [0, 4, 5, 6, 0], 2)).toStrictEqual([{ aStart: 1, aEnd: 4, bStart: 1, bEnd: 4 }]);
  });
});
