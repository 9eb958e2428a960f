import { resolve } from 'node:path';
import { InputError } from '../errors/index.js';
import type { DatasetConfig } from '../recipe/schema.js';
import { NO_OPTIONS } from '../util/component-options.js';
import { hash32, shuffled } from '../util/random.js';
import { fillPlaceholders, placeholderNames } from '../util/template.js';
import { readFileRows, type FileRow } from './file-rows.js';
import type { DatasetContext, DatasetDefinition, Task } from './types.js';

/**
 * Dataset `file`: tasks from the user's own .jsonl/.json/.csv/.parquet file at `dataset.path`.
 * `dataset.fields` maps columns to prompt, answer, id and metadata; `dataset.prompt_template`
 * builds the first user message from `{{column}}` placeholders; `dataset.split_by` divides rows into
 * `split` and `eval_split` (by a column, a second file, or a seeded held-out fraction). Tasks come
 * back in a seeded shuffled order, the same for the same seed.
 * @throws InputError for a missing path, an unreadable or empty file, a row without a mapped field
 * (naming the file, row and field), or a split with no rows.
 */
export const fileDataset: DatasetDefinition = {
  name: 'file',
  options: NO_OPTIONS,
  async load(split: string, ctx: DatasetContext): Promise<Task[]> {
    if (!ctx.path)
      throw new InputError('dataset.path: the file dataset needs a data file', {
        hint: 'set dataset.path: tasks.jsonl (or .json, .csv, .parquet)',
      });
    const config: FileDatasetConfig = ctx.config ?? {};
    const { file, rows } = await splitRows(ctx.path, split, config, ctx);
    if (rows.length === 0) {
      const by = config.split_by;
      throw new InputError(`${file}: no rows for split '${split}'`, {
        hint: by && 'field' in by ? `rows need ${by.field}: ${split}` : 'check dataset.split_by',
      });
    }
    const tasks = rows.map((row) => taskFromRow(row, file, config));
    return shuffled(tasks, hash32(ctx.seed, 'file-dataset', split));
  },
};

type FileDatasetConfig = Partial<
  Pick<DatasetConfig, 'fields' | 'prompt_template' | 'split_by' | 'format' | 'eval_split'>
>;

async function splitRows(
  path: string,
  split: string,
  config: FileDatasetConfig,
  ctx: DatasetContext,
): Promise<{ file: string; rows: FileRow[] }> {
  const by = config.split_by;
  const evalSplit = config.eval_split ?? 'test';
  if (by && 'file' in by) {
    const file = split === evalSplit ? resolve(ctx.recipeDir, by.file) : path;
    return { file, rows: await readFileRows(file, config.format) };
  }
  const rows = await readFileRows(path, config.format);
  if (!by) return { file: path, rows };
  if ('field' in by) {
    return {
      file: path,
      rows: rows.filter((r) => {
        const value = r.values[by.field];
        if (value === undefined || value === null) throw missingField(path, r.row, by.field, 'dataset.split_by.field');
        return String(value) === split;
      }),
    };
  }
  const held = heldOut(rows.length, by.fraction, ctx.seed);
  return { file: path, rows: rows.filter((_, i) => held.has(i) === (split === evalSplit)) };
}

/** Indices of the held-out rows: the `fraction` (at least one row) with the lowest seeded hash, so the choice is stable. */
function heldOut(count: number, fraction: number, seed: number): Set<number> {
  const size = Math.min(count - 1, Math.max(1, Math.round(count * fraction)));
  const order = [...Array(count).keys()].sort(
    (a, b) => hash32(seed, 'held-out', a) - hash32(seed, 'held-out', b) || a - b,
  );
  return new Set(order.slice(0, size));
}

/**
 * One task from one row: the prompt (template or prompt column), the answer column (default
 * `answer`, when present), the id column (default `row-N`), and the metadata columns (default all) as data.
 * @throws InputError naming the file, row and field when a mapped column is missing.
 */
export function taskFromRow(row: FileRow, file: string, config: FileDatasetConfig): Task {
  const fields = config.fields ?? { prompt: 'prompt' };
  const { values } = row;
  const get = (name: string, key: string): unknown => {
    const value = values[name];
    if (value === undefined || value === null) throw missingField(file, row.row, name, key);
    return value;
  };
  const template = config.prompt_template;
  const prompt = template
    ? fillPlaceholders(template, (name) => get(name, 'dataset.prompt_template'))
    : asText(get(fields.prompt, 'dataset.fields.prompt'));
  const answer = fields.answer ? get(fields.answer, 'dataset.fields.answer') : values.answer;
  const id = fields.id ? asText(get(fields.id, 'dataset.fields.id')) : `row-${row.row}`;
  const data = fields.metadata
    ? Object.fromEntries(fields.metadata.map((name) => [name, get(name, 'dataset.fields.metadata')]))
    : { ...values };
  return { id, prompt, ...(answer === undefined || answer === null ? {} : { answer }), data };
}

/**
 * The columns a dataset section needs in every row (prompt or template placeholders, answer, id,
 * metadata, split field), each with the recipe key that asks for it.
 */
export function requiredColumns(config: FileDatasetConfig): { readonly column: string; readonly key: string }[] {
  const fields = config.fields ?? { prompt: 'prompt' };
  const out: { column: string; key: string }[] = config.prompt_template
    ? placeholderNames(config.prompt_template).map((column) => ({ column, key: 'dataset.prompt_template' }))
    : [{ column: fields.prompt, key: 'dataset.fields.prompt' }];
  if (fields.answer) out.push({ column: fields.answer, key: 'dataset.fields.answer' });
  if (fields.id) out.push({ column: fields.id, key: 'dataset.fields.id' });
  for (const column of fields.metadata ?? []) out.push({ column, key: 'dataset.fields.metadata' });
  if (config.split_by && 'field' in config.split_by)
    out.push({ column: config.split_by.field, key: 'dataset.split_by.field' });
  return out;
}

function missingField(file: string, row: number, field: string, key: string): InputError {
  return new InputError(`${file} row ${row}: missing field '${field}' (named by ${key})`, {
    hint: `every row needs '${field}', or change ${key}`,
  });
}

function asText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}
