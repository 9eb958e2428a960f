import { describe, expect, it } from 'vitest';
import { CsvSyntaxError, parseCsv } from './csv.js';

describe('parseCsv', () => {
  it('returns records keyed by the header, with quoted commas, quotes and line breaks', () => {
    const text = 'question,answer,note\r\n"What is 2+2, exactly?",4,"say ""four"""\r\n"two\nlines",x,\n\nlast,"",z';
    expect(parseCsv(text)).toStrictEqual([
      { question: 'What is 2+2, exactly?', answer: '4', note: 'say "four"' },
      { question: 'two\nlines', answer: 'x', note: '' },
      { question: 'last', answer: '', note: 'z' },
    ]);
  });

  it('returns no records for a header-only or empty file and ignores a byte-order mark', () => {
    expect(parseCsv('\uFEFFa,b\n')).toStrictEqual([]);
    expect(parseCsv('')).toStrictEqual([]);
  });

  it('rejects a record with the wrong number of fields, naming its line', () => {
    expect(() => parseCsv('a,b\n1,2\n"x\ny",2,3\n')).toThrow(new CsvSyntaxError('3 fields, but the header has 2', 3));
  });

  it('rejects an unterminated quote and text after a closing quote', () => {
    expect(() => parseCsv('a\n"open\n')).toThrow('line 2: unterminated quoted field');
    expect(() => parseCsv('a,b\n"x"y,1\n')).toThrow('line 2: text after a closing quote');
  });

  it('rejects duplicate and empty column names', () => {
    expect(() => parseCsv('a,a\n1,2')).toThrow("line 1: duplicate column 'a' in the header");
    expect(() => parseCsv('a,,b\n1,2,3')).toThrow('line 1: empty column name in the header');
  });
});
