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

  test('returns an insertion or a deletion alone as one hunk with an empty side', () => {
    expect(diffTokens([1, 2], [1, 3, 2])).toStrictEqual([{ aStart: 1, aEnd: 1, bStart: 1, bEnd: 2 }]);
    expect(diffTokens([1, 3, 2], [1, 2])).toStrictEqual([{ aStart: 1, aEnd: 2, bStart: 1, bEnd: 1 }]);
    expect(diffTokens([], [1, 0])).toStrictEqual([{ aStart: 0, aEnd: 0, bStart: 0, bEnd: 2 }]);
  });

  test('returns the added repeat of a token once: the common suffix never reaches into the common prefix', () => {
    expect(diffTokens([2], [2, 2])).toStrictEqual([{ aStart: 1, aEnd: 1, bStart: 1, bEnd: 2 }]);
    expect(diffTokens([0, 0], [0])).toStrictEqual([{ aStart: 1, aEnd: 2, bStart: 1, bEnd: 1 }]);
  });

  test('returns only the differing token when the sequences share a suffix of several tokens', () => {
    expect(diffTokens([1, 0, 1], [0, 0, 1])).toStrictEqual([{ aStart: 0, aEnd: 1, bStart: 0, bEnd: 1 }]);
  });

  test('returns the deletion before the insertion where either order is as short', () => {
    expect(diffTokens([0, 1], [1, 0])).toStrictEqual([
      { aStart: 0, aEnd: 1, bStart: 0, bEnd: 0 },
      { aStart: 2, aEnd: 2, bStart: 1, bEnd: 2 },
    ]);
    expect(diffTokens([0, 2, 0], [1, 2])).toStrictEqual([
      { aStart: 0, aEnd: 1, bStart: 0, bEnd: 1 },
      { aStart: 2, aEnd: 3, bStart: 2, bEnd: 2 },
    ]);
  });

  test('returns the exact hunks when the edits needed equal the limit, one hunk when they exceed it', () => {
    expect(diffTokens([0, 1, 0], [1, 0, 1], 2)).toStrictEqual([
      { aStart: 0, aEnd: 1, bStart: 0, bEnd: 0 },
      { aStart: 3, aEnd: 3, bStart: 2, bEnd: 3 },
    ]);
    expect(diffTokens([1, 0], [0, 1], 1)).toStrictEqual([{ aStart: 0, aEnd: 2, bStart: 0, bEnd: 2 }]);
  });

  test('returns the hunks of a shortest edit script that turn a into b', () => {
    expect(diffTokens([0, 0], [2, 1])).toStrictEqual([{ aStart: 0, aEnd: 2, bStart: 0, bEnd: 2 }]);
    expect(diffTokens([1, 1, 0, 0, 1], [0, 0, 1, 0], 4)).toStrictEqual([
      { aStart: 0, aEnd: 2, bStart: 0, bEnd: 0 },
      { aStart: 5, aEnd: 5, bStart: 3, bEnd: 4 },
    ]);
    // Seeded pairs over a small alphabet: replaying the hunks on a gives b, and they edit as few tokens as
    // the longest common subsequence allows.
    let seed = 7;
    const next = (below: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % below;
    };
    for (let i = 0; i < 300; i++) {
      const a = Array.from({ length: next(12) }, () => next(3));
      const b = Array.from({ length: next(12) }, () => next(3));
      const hunks = diffTokens(a, b);
      let replayed: number[] = [];
      let at = 0;
      for (const h of hunks) {
        expect(h.aStart).toBeGreaterThan(at === 0 ? -1 : at);
        replayed = replayed.concat(a.slice(at, h.aStart), b.slice(h.bStart, h.bEnd));
        at = h.aEnd;
      }
      expect(replayed.concat(a.slice(at))).toStrictEqual(b);
      const edits = hunks.reduce((sum, h) => sum + h.aEnd - h.aStart + h.bEnd - h.bStart, 0);
      expect(edits).toBe(a.length + b.length - 2 * lcsLength(a, b));
    }
  });
});

function lcsLength(a: readonly number[], b: readonly number[]): number {
  let row = new Array<number>(b.length + 1).fill(0);
  for (const x of a) {
    const next = [0];
    for (let j = 0; j < b.length; j++) next.push(x === b[j] ? row[j]! + 1 : Math.max(row[j + 1]!, next[j]!));
    row = next;
  }
  return row[b.length]!;
}
