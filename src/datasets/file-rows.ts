import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { InputError } from '../errors/index.js';
import { CsvSyntaxError, parseCsv } from '../util/csv.js';

/** Formats a data file may have. */
export type FileFormat = 'jsonl' | 'json' | 'csv' | 'parquet';

/** One row of a data file with its 1-based row number (the line number for .jsonl). */
export interface FileRow {
  readonly row: number;
  readonly values: Readonly<Record<string, unknown>>;
}

const EXTENSIONS: Readonly<Record<string, FileFormat>> = {
  '.jsonl': 'jsonl',
  '.ndjson': 'jsonl',
  '.json': 'json',
  '.csv': 'csv',
  '.parquet': 'parquet',
};

/**
 * The format of `file`: `format` when given, else from the extension.
 * @throws InputError for an extension atk cannot read.
 */
export function fileFormat(file: string, format?: FileFormat): FileFormat {
  if (format) return format;
  const found = EXTENSIONS[extname(file).toLowerCase()];
  if (!found)
    throw new InputError(`${file}: cannot tell the format from '${extname(file) || '(no extension)'}'`, {
      hint: 'use .jsonl, .json, .csv or .parquet, or set dataset.format',
    });
  return found;
}

/**
 * Reads the rows of a .jsonl, .json (an array of objects), .csv (with a header) or .parquet file,
 * at most `limit` of them when given. Parquet integers that do not fit a JS number become strings.
 * @throws InputError for an unreadable or empty file and for a row that is not an object, naming the row.
 */
export async function readFileRows(file: string, format?: FileFormat, limit?: number): Promise<FileRow[]> {
  const kind = fileFormat(file, format);
  const rows = kind === 'parquet' ? await parquetRows(file, limit) : textRows(file, kind, await readText(file), limit);
  if (rows.length === 0)
    throw new InputError(`${file}: no rows`, { hint: 'the dataset file is empty; add one task per row' });
  return rows;
}

async function readText(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    throw new InputError(
      `${file}: cannot read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      { hint: 'check dataset.path; relative paths resolve against the recipe' },
    );
  }
}

function textRows(file: string, kind: Exclude<FileFormat, 'parquet'>, text: string, limit = Infinity): FileRow[] {
  if (kind === 'jsonl') {
    const rows: FileRow[] = [];
    const lines = text.split('\n');
    for (let i = 0; i < lines.length && rows.length < limit; i++) {
      if (!lines[i]!.trim()) continue;
      rows.push({ row: i + 1, values: objectRow(file, i + 1, parseJson(file, `row ${i + 1}`, lines[i]!)) });
    }
    return rows;
  }
  if (kind === 'json') {
    if (!text.trim()) return [];
    const parsed = parseJson(file, 'file', text);
    if (!Array.isArray(parsed))
      throw new InputError(`${file}: expected a JSON array of objects, got ${typeName(parsed)}`);
    return parsed.slice(0, limit).map((value, i) => ({ row: i + 1, values: objectRow(file, i + 1, value) }));
  }
  try {
    return parseCsv(text)
      .slice(0, limit)
      .map((values, i) => ({ row: i + 1, values }));
  } catch (error) {
    if (error instanceof CsvSyntaxError)
      throw new InputError(`${file}: ${error.message}`, { hint: 'CSV needs a header line and RFC 4180 quoting' });
    throw error;
  }
}

async function parquetRows(file: string, limit?: number): Promise<FileRow[]> {
  let objects: Record<string, unknown>[];
  try {
    const buffer = await asyncBufferFromFile(file);
    objects = (await parquetReadObjects({ file: buffer, ...(limit === undefined ? {} : { rowEnd: limit }) })) as Record<
      string,
      unknown
    >[];
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new InputError(`${file}: cannot read as parquet (${code ?? (error as Error).message})`, { cause: error });
  }
  return objects.map((values, i) => ({ row: i + 1, values: plainValues(values) as Record<string, unknown> }));
}

/** Parquet gives BigInt for int64 columns; tasks must be JSON, so they become numbers (or strings when too big). */
function plainValues(value: unknown): unknown {
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (Array.isArray(value)) return value.map(plainValues);
  if (value instanceof Date) return value.toISOString();
  if (value && typeof value === 'object' && !(value instanceof Uint8Array))
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plainValues(v)]));
  return value;
}

function parseJson(file: string, where: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InputError(`${file} ${where}: invalid JSON (${(error as Error).message})`);
  }
}

function objectRow(file: string, row: number, value: unknown): Record<string, unknown> {
  if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  throw new InputError(`${file} row ${row}: expected an object of fields, got ${typeName(value)}`);
}

function typeName(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
}
