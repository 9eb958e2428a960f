import { describe, expect, test } from 'vitest';
import { LiteralError, parsePythonLiteral, pythonLiteral } from './python-literal.js';

describe('parsePythonLiteral', () => {
  test('returns the JSON value of each kind of literal', () => {
    const cases: [string, unknown][] = [
      [`'it\\'s'`, "it's"],
      [`"tab\\tnl\\nq\\"bs\\\\"`, 'tab\tnl\nq"bs\\'],
      [`"\\x41\\101\\u00e9\\U0001F600\\q"`, 'AAé😀\\q'],
      [`'''a\n"b"'''`, 'a\n"b"'],
      [`r"\\d+\\""`, '\\d+\\"'],
      [`"a" 'b'\n "c"`, 'abc'],
      ['1_000', 1000],
      ['-1.5e3', -1500],
      ['01.5', 1.5],
      ['.5', 0.5],
      ['0x1F', 31],
      ['0o17', 15],
      ['0b101', 5],
      ['0O17', 15],
      ['0B11', 3],
      ['0x0b1', 177],
      ['007.', 7],
      ['+1', 1],
      ['- 1', -1],
      ['[1 , 2]', [1, 2]],
      [`u"a" r"b"`, 'ab'],
      [`"\\U0010FFFF"`, '\u{10FFFF}'],
      ['True', true],
      ['False', false],
      ['None', null],
      ['[1, (2,), (3), (), [],]', [1, [2], 3, [], []]],
      [
        `{'a': {1: None, True: 2, None: 3}, "__proto__": 1,}`,
        JSON.parse('{"a": {"1": null, "true": 2, "null": 3}, "__proto__": 1}'),
      ],
    ];
    for (const [text, value] of cases) expect([text, parsePythonLiteral(text)]).toStrictEqual([text, value]);
  });

  test('rejects what ast.literal_eval rejects or JSON cannot hold, naming where', () => {
    const cases: [string, string][] = [
      ['x', 'expected a literal (a string, number, True, False, None, list, tuple or dict) at character 1, found "x"'],
      ['007', 'expected a number at character 1, found "007"'],
      ['0007', 'expected a number at character 1, found "0007"'],
      ['-"a"', 'expected a number at character 2, found "\\"a\\""'],
      ['1e400', 'the number is out of range at character 6, found the end'],
      [
        '',
        'expected a literal (a string, number, True, False, None, list, tuple or dict) at character 1, found the end',
      ],
      ['"\\x4g"', 'a \\x escape needs 2 hex digits at character 4, found "4g\\""'],
      ['"\\U00110000"', 'the escape is past the last code point at character 4, found "00110000\\""'],
      ['{"a": 1 "b": 2}', `expected '}' at character 9, found "\\"b\\": 2}"`],
      ['{ (1,): 2}', 'a dict key must be a string, number, True, False or None at character 3, found "(1,): 2}"'],
      ['"a" rx', 'unexpected text after the value at character 5, found "rx"'],
      ['1j', 'expected a number at character 1, found "1j"'],
      ['{1, 2}', `expected ':' at character 3, found ", 2}"`],
      ['{[1]: 2}', 'a dict key must be a string, number, True, False or None at character 2, found "[1]: 2}"'],
      ['"open', 'the string is not closed at character 1, found "\\"open"'],
      ['"a\nb"', 'a line break inside a one-quote string at character 3, found "\\nb\\""'],
      ['"\\N{DASH}"', 'named \\N{...} escapes are not supported at character 4, found "{DASH}\\""'],
      ['1 2', 'unexpected text after the value at character 3, found "2"'],
      [
        'true',
        'expected a literal (a string, number, True, False, None, list, tuple or dict) at character 1, found "true"',
      ],
    ];
    for (const [text, message] of cases) {
      expect(() => parsePythonLiteral(text), text).toThrow(
        expect.objectContaining({ message, kind: 'syntax', constructor: LiteralError }),
      );
    }
  });

  test('returns lists, tuples and dicts nested 64 levels deep and rejects 65 as too deep', () => {
    const nested = (depth: number, open: string, close: string): string => open.repeat(depth) + close.repeat(depth);
    const dicts = (depth: number): string => `${'{"a": '.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`;
    for (const text of [nested(64, '[', ']'), nested(64, '(', ')'), dicts(64)])
      expect(() => parsePythonLiteral(text)).not.toThrow();
    for (const text of [nested(65, '[', ']'), nested(65, '(', ')'), dicts(65)]) {
      expect(() => parsePythonLiteral(text)).toThrow(
        expect.objectContaining({ message: 'the value nests deeper than 64 levels', kind: 'depth' }),
      );
    }
  });
});

describe('pythonLiteral', () => {
  test('returns Python source that reads back as the same value', () => {
    const value = { s: 'q"\n\\ é', n: [1, -2.5, 1e21], b: [true, false, null], o: { '': {} } };
    expect(pythonLiteral(value)).toBe(
      '{"s": "q\\"\\n\\\\ é", "n": [1, -2.5, 1e+21], "b": [True, False, None], "o": {"": {}}}',
    );
    expect(parsePythonLiteral(pythonLiteral(value))).toStrictEqual(value);
  });

  test('returns None for undefined and leaves out undefined keys, as JSON does', () => {
    expect(pythonLiteral(undefined)).toBe('None');
    expect(pythonLiteral({ a: 1, b: undefined, c: [undefined] })).toBe('{"a": 1, "c": [None]}');
  });
});
