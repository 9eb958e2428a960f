import { describe, expect, test } from 'vitest';
import { bracketExtent } from './bracket-extent.js';

describe('bracketExtent', () => {
  test('returns the end and top-level items of a JSON value, skipping brackets and commas in strings', () => {
    const text = 'call [{"a": "x],\\"y"}, [1, 2], 3] then';
    expect(bracketExtent(text, 5)).toStrictEqual({
      end: 33,
      balanced: true,
      items: [
        [6, 21],
        [22, 29],
        [30, 32],
      ],
    });
    expect(text.slice(5, 33)).toBe('[{"a": "x],\\"y"}, [1, 2], 3]');
  });

  test("reads a single quote as text in JSON and as a string's quote in Python", () => {
    const text = `{"q": don't} then '}`;
    expect(bracketExtent(text, 0)).toStrictEqual({ end: 12, balanced: true, items: [[1, 11]] });
    expect(bracketExtent(text, 0, true)).toStrictEqual({ end: 20, balanced: true, items: [[1, 19]] });
    expect(bracketExtent("[f(s='a]'), g(t='''b'c]''')] x", 0, true)).toStrictEqual({
      end: 28,
      balanced: true,
      items: [
        [1, 10],
        [11, 27],
      ],
    });
  });

  test('returns end -1, still balanced, for a value the text ends inside, and unbalanced for a wrong closing bracket', () => {
    expect(bracketExtent('[1, [2', 0)).toStrictEqual({ end: -1, balanced: true, items: [[1, 2]] });
    expect(bracketExtent('[1, "2]', 0)).toStrictEqual({ end: -1, balanced: true, items: [[1, 2]] });
    expect(bracketExtent('[1, (2]', 0, true)).toStrictEqual({ end: 7, balanced: false, items: [[1, 2]] });
  });
});
