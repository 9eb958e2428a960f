import { existsSync, readdirSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { InputError } from '../errors/index.js';
import { parseComponentOptions } from '../util/component-options.js';
import { recordFromLcbRow, recordFromLine, taskFromRecord, type CodeProblemRecord } from './code-records.js';
import type { DatasetContext, DatasetDefinition, Task } from './types.js';

const OptionsSchema = z.strictObject({
  subsets: z.array(z.string().min(1)).optional().describe('Keep only these sources, e.g. [lcbv5, codeforces].'),
});

/**
 * DeepCoder coding problems (`agentica-org/DeepCoder-Preview-Dataset` and its sources). Reads
 * `dataset.path` (a normalised .jsonl file, or a directory of `<subset>_<split>.jsonl` files as
 * `atk data fetch deepcoder` writes them); without a path, `<data>/deepcoder/fetched` when it
 * holds the split, else the shared 737-problem sample (`test` split only, public tests only).
 * A file of LiveCodeBench's own rows (`code_generation_lite`'s `test*.jsonl`: `question_content`,
 * `public_test_cases`, base64/zlib/pickle `private_test_cases`) is read as the requested split.
 * Option `subsets` keeps only those sources (e.g. `[lcbv5]`).
 * @throws ConfigError on bad options; InputError on unreadable or malformed data.
 */
export const deepcoderDataset: DatasetDefinition = {
  name: 'deepcoder',
  options: OptionsSchema,
  async load(split: string, ctx: DatasetContext): Promise<Task[]> {
    const { subsets } = parseComponentOptions(OptionsSchema, ctx.options, 'dataset.options');
    const files = codeDataFiles(ctx, split);
    const records = await loadCodeRecords(files, split);
    const kept = subsets ? records.filter((r) => subsets.includes(r.source)) : records;
    if (kept.length === 0) {
      throw new InputError(
        `deepcoder: no problems for split '${split}'${subsets ? ` in subsets ${subsets.join(', ')}` : ''} in ${files.join(', ')}`,
        {
          hint: "the bundled sample has only the 'test' split; `atk data fetch deepcoder` downloads the rest",
        },
      );
    }
    return kept.map(taskFromRecord);
  },
};

/** The jsonl files a load reads, in a fixed order. @throws InputError when none exist. */
export function codeDataFiles(ctx: DatasetContext, split: string): string[] {
  if (ctx.path)
    return existsSync(ctx.path) && statSync(ctx.path).isDirectory() ? splitFiles(ctx.path, split) : [ctx.path];
  const fetched = join(ctx.dataDir, 'deepcoder', 'fetched');
  if (existsSync(fetched) && splitFiles(fetched, split).length > 0) return splitFiles(fetched, split);
  return [join(ctx.dataDir, 'deepcoder', 'normalized', 'code_sample.jsonl')];
}

function splitFiles(dir: string, split: string): string[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith(`_${split}.jsonl`))
    .sort()
    .map((name) => join(dir, name));
}

/**
 * Reads normalised code-problem jsonl files, keeping the records of `split`; a LiveCodeBench row
 * (it has `question_content`) carries no split and belongs to the one asked for.
 * @throws InputError naming file and line of the first bad record.
 */
export async function loadCodeRecords(files: readonly string[], split: string): Promise<CodeProblemRecord[]> {
  const records: CodeProblemRecord[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      throw new InputError(
        `deepcoder: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
        {
          hint: 'set dataset.path, $ATK_DATA_DIR, or run `atk data fetch deepcoder`',
        },
      );
    }
    const lines = text.split('\n');
    for (let i = 0; i < lines.length; i++) {
      if (!lines[i].trim()) continue;
      const where = `${file}:${i + 1}`;
      let value: unknown;
      try {
        value = JSON.parse(lines[i]);
      } catch (error) {
        throw new InputError(`${where}: invalid JSON (${(error as Error).message})`);
      }
      const record = isLcbRow(value) ? recordFromLcbRowAt(value, split, i, where) : recordFromLineAt(value, where);
      if (record.split === split) records.push(record);
    }
  }
  return records;
}

function isLcbRow(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && 'question_content' in value;
}

function recordFromLcbRowAt(
  row: Record<string, unknown>,
  split: string,
  line: number,
  where: string,
): CodeProblemRecord {
  return located(() => recordFromLcbRow(row, split, line), where);
}

function recordFromLineAt(value: unknown, where: string): CodeProblemRecord {
  return located(() => recordFromLine(value, where), where);
}

/** `read()`, with its InputError's message prefixed by `where` (file:line) when it does not start with it. */
function located(read: () => CodeProblemRecord, where: string): CodeProblemRecord {
  try {
    return read();
  } catch (error) {
    if (error instanceof InputError && !error.message.startsWith(where))
      throw new InputError(`${where}: ${error.message}`, { hint: error.hint });
    throw error;
  }
}
