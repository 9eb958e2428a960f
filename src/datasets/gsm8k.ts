import { existsSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { InputError } from '../errors/index.js';
import { NO_OPTIONS } from '../util/component-options.js';
import type { DatasetContext, DatasetDefinition, Task } from './types.js';

/** Asks for the answer in both forms `math_answer` reads by default, and points at the calculator. */
export const GSM8K_SYSTEM_PROMPT =
  'Solve the math word problem step by step. Use the calculator tool for arithmetic. ' +
  'End your reply with the final answer as a plain number on its own line, written as "#### N" (or "Answer: N").';

/**
 * Dataset `gsm8k` (openai/grade-school-math): splits `train` and `test`, read from `dataset.path`
 * (a directory holding `<split>.jsonl`, or one .jsonl file) or `<data>/gsm8k` as `atk data fetch
 * gsm8k` writes it. `answer` is the text after the last `####` without commas, as the reference
 * grader compares it; `data.solution` is the worked solution with its `<<expr=result>>` notes.
 * @throws InputError when the file is missing or a row is malformed (file:line).
 */
export const gsm8kDataset: DatasetDefinition = {
  name: 'gsm8k',
  options: NO_OPTIONS,
  systemPrompt: GSM8K_SYSTEM_PROMPT,
  async load(split, ctx): Promise<Task[]> {
    return loadGsm8k(gsm8kFile(ctx, split), split);
  },
};

/** The file a split is read from. */
export function gsm8kFile(ctx: Pick<DatasetContext, 'path' | 'dataDir'>, split: string): string {
  const root = ctx.path ?? join(ctx.dataDir, 'gsm8k');
  return existsSync(root) && statSync(root).isFile() ? root : join(root, `${split}.jsonl`);
}

/**
 * Parse a GSM8K jsonl file into tasks with ids `gsm8k-<split>-<row>`.
 * @throws InputError when the file is unreadable or a row lacks `question`/`answer` or `####`.
 */
export async function loadGsm8k(file: string, split: string): Promise<Task[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new InputError(
      `gsm8k: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      {
        hint: 'run `atk data fetch gsm8k`, or set dataset.path to a directory with train.jsonl/test.jsonl',
        cause: error,
      },
    );
  }
  const tasks: Task[] = [];
  text.split('\n').forEach((line, index) => {
    if (line.trim() === '') return;
    const where = `${file}:${index + 1}`;
    let row: { question?: unknown; answer?: unknown };
    try {
      row = JSON.parse(line) as typeof row;
    } catch (error) {
      throw new InputError(`${where}: not valid JSON (${(error as Error).message})`);
    }
    if (typeof row.question !== 'string' || typeof row.answer !== 'string')
      throw new InputError(`${where}: a GSM8K row needs string fields question and answer`);
    const answer = gsm8kFinalAnswer(row.answer);
    if (answer === undefined) throw new InputError(`${where}: the answer has no '#### N' final line`);
    tasks.push({ id: `gsm8k-${split}-${tasks.length}`, prompt: row.question, answer, data: { solution: row.answer } });
  });
  return tasks;
}

/** The reference final answer: the text after the last `####`, trimmed, commas removed. */
export function gsm8kFinalAnswer(solution: string): string | undefined {
  const at = solution.lastIndexOf('####');
  if (at < 0) return undefined;
  const answer = solution
    .slice(at + 4)
    .trim()
    .replace(/,/g, '');
  return answer === '' ? undefined : answer;
}
