import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetWriteFile } from 'hyparquet-writer';
import { describe, expect, it } from 'vitest';
import { InputError } from '../errors/index.js';
import { DatasetSchema } from '../recipe/schema.js';
import { fileDataset } from './file.js';
import type { DatasetContext } from './types.js';

const dir = mkdtempSync(join(tmpdir(), 'atk-file-dataset-'));
const write = (name: string, text: string): string => {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
};
const rows = [
  { q: 'What is 2+3?', a: 5, level: 'easy', split: 'train' },
  { q: 'What is 7*6?', a: 42, level: 'easy', split: 'test' },
  { q: 'What is 12-20?', a: -8, level: 'hard', split: 'train' },
  { q: 'What is 9/3?', a: 3, level: 'hard', split: 'train' },
];
const jsonl = write('tasks.jsonl', rows.map((r) => JSON.stringify(r)).join('\n') + '\n');

function context(path: string, dataset: Record<string, unknown>, seed = 0): DatasetContext {
  return { recipeDir: dir, dataDir: dir, path, seed, options: {}, config: DatasetSchema.parse(dataset) };
}
const mapping = { fields: { prompt: 'q', answer: 'a', metadata: ['level'] } };

describe('fileDataset', () => {
  it('returns tasks mapped from the fields, in a seeded order that the seed alone decides', async () => {
    const tasks = await fileDataset.load('train', context(jsonl, mapping));
    expect([...tasks].sort((x, y) => x.id.localeCompare(y.id))).toStrictEqual([
      { id: 'row-1', prompt: 'What is 2+3?', answer: 5, data: { level: 'easy' } },
      { id: 'row-2', prompt: 'What is 7*6?', answer: 42, data: { level: 'easy' } },
      { id: 'row-3', prompt: 'What is 12-20?', answer: -8, data: { level: 'hard' } },
      { id: 'row-4', prompt: 'What is 9/3?', answer: 3, data: { level: 'hard' } },
    ]);
    const again = await fileDataset.load('train', context(jsonl, mapping));
    expect(again).toStrictEqual(tasks);
    const orders = new Set<string>();
    for (let seed = 0; seed < 8; seed++)
      orders.add((await fileDataset.load('train', context(jsonl, mapping, seed))).map((t) => t.id).join());
    expect(orders.size).toBeGreaterThan(1);
  });

  it('returns prompts built from the template and every column as data without metadata', async () => {
    const [task] = await fileDataset.load(
      'train',
      context(jsonl, {
        prompt_template: 'Solve ({{level}}): {{ q }}',
        fields: { answer: 'a' },
        split_by: { fraction: 0.25 },
      }),
    );
    expect(task!.prompt).toMatch(/^Solve \((easy|hard)\): What is/);
    expect(Object.keys(task!.data).sort()).toStrictEqual(['a', 'level', 'q', 'split']);
  });

  it('returns the rows of each split by field, by second file, and by a held-out fraction', async () => {
    const ids = async (split: string, dataset: Record<string, unknown>): Promise<string[]> =>
      (await fileDataset.load(split, context(jsonl, { ...mapping, ...dataset }))).map((t) => t.id).sort();
    expect(await ids('train', { split_by: { field: 'split' } })).toStrictEqual(['row-1', 'row-3', 'row-4']);
    expect(await ids('test', { split_by: { field: 'split' } })).toStrictEqual(['row-2']);

    write('eval.json', JSON.stringify([{ q: 'What is 1+1?', a: 2, level: 'easy' }]));
    const evalTasks = await fileDataset.load('test', context(jsonl, { ...mapping, split_by: { file: 'eval.json' } }));
    expect(evalTasks).toStrictEqual([{ id: 'row-1', prompt: 'What is 1+1?', answer: 2, data: { level: 'easy' } }]);
    expect(await ids('train', { split_by: { file: 'eval.json' } })).toHaveLength(4);

    const held = await ids('test', { split_by: { fraction: 0.5 } });
    const kept = await ids('train', { split_by: { fraction: 0.5 } });
    expect(held).toHaveLength(2);
    expect([...held, ...kept].sort()).toStrictEqual(['row-1', 'row-2', 'row-3', 'row-4']);
  });

  it('returns the same tasks from .json, .csv and .parquet files', async () => {
    const json = write('tasks.json', JSON.stringify(rows));
    const csv = write(
      'tasks.csv',
      'q,a,level,split\n' + rows.map((r) => `"${r.q}",${r.a},${r.level},${r.split}`).join('\r\n'),
    );
    const parquet = join(dir, 'tasks.parquet');
    parquetWriteFile({
      filename: parquet,
      columnData: [
        { name: 'q', data: rows.map((r) => r.q), type: 'STRING' },
        { name: 'a', data: rows.map((r) => BigInt(r.a)), type: 'INT64' },
        { name: 'level', data: rows.map((r) => r.level), type: 'STRING' },
      ],
    });
    const expected = await fileDataset.load('train', context(jsonl, mapping));
    expect(await fileDataset.load('train', context(json, mapping))).toStrictEqual(expected);
    expect(await fileDataset.load('train', context(parquet, mapping))).toStrictEqual(expected);
    // CSV values are text.
    expect(await fileDataset.load('train', context(csv, mapping))).toStrictEqual(
      expected.map((t) => ({ ...t, answer: String(t.answer) })),
    );
  });

  it('rejects a row without a mapped field, naming the file, row number and field', async () => {
    const bad = write('bad.jsonl', '{"q": "a", "a": 1}\n\n{"question": "b", "a": 2}\n');
    const error = await fileDataset.load('train', context(bad, { fields: { prompt: 'q' } })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect((error as Error).message).toBe(`${bad} row 3: missing field 'q' (named by dataset.fields.prompt)`);
    await expect(fileDataset.load('train', context(jsonl, { prompt_template: '{{q}} {{hint}}' }))).rejects.toThrow(
      `${jsonl} row 1: missing field 'hint' (named by dataset.prompt_template)`,
    );
  });

  it('rejects an empty, unreadable, malformed or missing file', async () => {
    await expect(fileDataset.load('train', context(write('empty.jsonl', '\n\n'), {}))).rejects.toThrow(
      'empty.jsonl: no rows',
    );
    await expect(fileDataset.load('train', context(join(dir, 'absent.csv'), {}))).rejects.toThrow(
      'absent.csv: cannot read (ENOENT)',
    );
    await expect(
      fileDataset.load('train', context(write('broken.jsonl', '{"prompt": "x"}\n{oops\n'), {})),
    ).rejects.toThrow('broken.jsonl row 2: invalid JSON');
    await expect(fileDataset.load('train', context(write('scalar.json', '[1]'), {}))).rejects.toThrow(
      'scalar.json row 1: expected an object of fields, got number',
    );
    await expect(fileDataset.load('train', context(write('junk.parquet', 'not parquet'), {}))).rejects.toThrow(
      'junk.parquet: cannot read as parquet',
    );
    await expect(fileDataset.load('train', { recipeDir: dir, dataDir: dir, seed: 0, options: {} })).rejects.toThrow(
      'dataset.path: the file dataset needs a data file',
    );
  });
});
