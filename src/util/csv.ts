/**
 * RFC 4180 CSV: comma-separated fields, fields in double quotes may hold commas, line breaks and
 * doubled quotes (`""`); records end with CRLF or LF. The first record is the header.
 */

/** A CSV problem, with the 1-based line where it was found. */
export class CsvSyntaxError extends Error {
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(`line ${line}: ${message}`);
  }
}

/**
 * Parses CSV text into one object per data record, keyed by the header's column names. Every
 * value is a string; blank lines are skipped.
 * @throws CsvSyntaxError on an unterminated quote, text after a closing quote, a duplicate or
 * empty column name, or a record with a different number of fields than the header.
 */
export function parseCsv(text: string): Record<string, string>[] {
  const records = csvRecords(text.startsWith('\uFEFF') ? text.slice(1) : text);
  if (records.length === 0) return [];
  const [header, ...rows] = records;
  const columns = header!.fields;
  const seen = new Set<string>();
  for (const name of columns) {
    if (name === '') throw new CsvSyntaxError('empty column name in the header', header!.line);
    if (seen.has(name)) throw new CsvSyntaxError(`duplicate column '${name}' in the header`, header!.line);
    seen.add(name);
  }
  return rows.map(({ fields, line }) => {
    if (fields.length !== columns.length)
      throw new CsvSyntaxError(`${fields.length} fields, but the header has ${columns.length}`, line);
    return Object.fromEntries(columns.map((name, i) => [name, fields[i]!]));
  });
}

interface CsvRecord {
  readonly fields: string[];
  /** Line where the record starts. */
  readonly line: number;
}

function csvRecords(text: string): CsvRecord[] {
  const records: CsvRecord[] = [];
  let fields: string[] = [];
  let field = '';
  // A quoted empty field ("") is data; an unquoted empty record is a blank line.
  let quoted = false;
  let line = 1;
  let start = 1;
  const endField = (): void => {
    fields.push(field);
    field = '';
    quoted = false;
  };
  const endRecord = (): void => {
    const blank = fields.length === 0 && field === '' && !quoted;
    endField();
    if (!blank) records.push({ fields, line: start });
    fields = [];
  };
  let i = 0;
  while (i < text.length) {
    const ch = text[i]!;
    if (ch === '"' && field === '' && !quoted) {
      quoted = true;
      const quoteLine = line;
      for (i++; ; ) {
        if (i >= text.length) throw new CsvSyntaxError('unterminated quoted field', quoteLine);
        const c = text[i++]!;
        if (c === '"' && text[i] === '"') {
          field += '"';
          i++;
        } else if (c === '"') {
          break;
        } else {
          if (c === '\n') line++;
          field += c;
        }
      }
      const next = text[i];
      if (next !== undefined && next !== ',' && next !== '\n' && next !== '\r')
        throw new CsvSyntaxError('text after a closing quote', line);
    } else if (ch === ',') {
      endField();
      i++;
    } else if (ch === '\n' || ch === '\r') {
      endRecord();
      i += ch === '\r' && text[i + 1] === '\n' ? 2 : 1;
      start = ++line;
    } else {
      field += ch;
      i++;
    }
  }
  if (field !== '' || quoted || fields.length > 0) endRecord();
  return records;
}
