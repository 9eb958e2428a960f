import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { InputError } from '../errors/index.js';
import { judgeMathAnswer } from '../rewards/math-answer.js';
import { fullData, fullOrSlice } from '../__fixtures__/test-data.js';
import { dataDir } from '../util/paths.js';
import { fileSha256 } from './resumable-download.js';
import { loadGsm8kManifest } from './fetch-gsm8k.js';
import { gsm8kDataset, gsm8kFinalAnswer, GSM8K_SYSTEM_PROMPT } from './gsm8k.js';
import type { DatasetContext } from './types.js';

const ctx = (path?: string): DatasetContext => ({
  recipeDir: '.',
  dataDir: dataDir(),
  seed: 0,
  options: {},
  ...(path ? { path } : {}),
});

describe('gsm8kDataset', () => {
  test('returns every row of the real train and test files with the final answer', async () => {
    const [train, testSplit] = await Promise.all([gsm8kDataset.load('train', ctx()), gsm8kDataset.load('test', ctx())]);
    expect([train.length, testSplit.length]).toStrictEqual(fullOrSlice([7473, 1319], [40, 40]));
    expect(train[0]).toStrictEqual({
      id: 'gsm8k-train-0',
      prompt:
        'Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. How many clips did Natalia sell altogether in April and May?',
      answer: '72',
      data: {
        solution:
          'Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n#### 72',
      },
    });
    expect(testSplit.at(-1)!.id).toBe(fullOrSlice('gsm8k-test-1318', 'gsm8k-test-39'));
  });

  test('returns integer answers without commas, negatives included', async () => {
    const tasks = [...(await gsm8kDataset.load('train', ctx())), ...(await gsm8kDataset.load('test', ctx()))];
    expect(tasks.filter((t) => !/^-?\d+$/.test(t.answer as string))).toStrictEqual([]);
    expect(tasks.filter((t) => (t.data.solution as string).split('####').at(-1)!.includes(',')).length).toBe(
      fullOrSlice(79 + 14, 4),
    );
    expect(tasks.filter((t) => (t.answer as string).startsWith('-')).length).toBe(fullOrSlice(3 + 2, 4));
  });

  test('returns answers that math_answer grades correct against each reference solution', async () => {
    const tasks = await gsm8kDataset.load('test', ctx());
    expect(tasks.filter((t) => !judgeMathAnswer(t.data.solution as string, t.answer as string).correct)).toStrictEqual(
      [],
    );
  });

  test('returns a default system prompt asking for #### N or Answer: N and the calculator', () => {
    expect(gsm8kDataset.systemPrompt).toBe(GSM8K_SYSTEM_PROMPT);
    expect(GSM8K_SYSTEM_PROMPT).toMatch(/#### N.*Answer: N/);
    expect(GSM8K_SYSTEM_PROMPT).toMatch(/calculator/);
  });

  test('returns rows of a file given as dataset.path', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'atk-gsm8k-')), 'mine.jsonl');
    writeFileSync(file, `${JSON.stringify({ question: 'q?', answer: 'a\n#### 1,000' })}\n\n`);
    expect(await gsm8kDataset.load('test', ctx(file))).toStrictEqual([
      { id: 'gsm8k-test-0', prompt: 'q?', answer: '1000', data: { solution: 'a\n#### 1,000' } },
    ]);
  });

  test('rejects a missing file with a fetch hint, and malformed rows with file:line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atk-gsm8k-'));
    const error = await gsm8kDataset.load('train', ctx(dir)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).hint).toMatch(/atk data fetch gsm8k/);
    writeFileSync(
      join(dir, 'train.jsonl'),
      `${JSON.stringify({ question: 'q', answer: '#### 1' })}\n{"question": "q"}\n`,
    );
    await expect(gsm8kDataset.load('train', ctx(dir))).rejects.toThrow(
      `${join(dir, 'train.jsonl')}:2: a GSM8K row needs string fields question and answer`,
    );
    writeFileSync(join(dir, 'train.jsonl'), `{"question": "q", "answer": "no marker"}\n`);
    await expect(gsm8kDataset.load('train', ctx(dir))).rejects.toThrow(/:1: the answer has no '#### N' final line/);
    writeFileSync(join(dir, 'train.jsonl'), `{oops\n`);
    await expect(gsm8kDataset.load('train', ctx(dir))).rejects.toThrow(/:1: not valid JSON/);
  });
});

describe('gsm8kFinalAnswer', () => {
  test('returns the text after the last ####, trimmed and without commas', () => {
    expect(['x\n#### 1,234', 'a #### 1 b #### -5 ', '#### ', 'none'].map(gsm8kFinalAnswer)).toStrictEqual([
      '1234',
      '-5',
      undefined,
      undefined,
    ]);
  });
});

describe('datasets/gsm8k/manifest.json', () => {
  test('returns the size and sha256 of the shared verbatim copies (against the slices: their rows are the first of the pinned files)', async () => {
    const manifest = loadGsm8kManifest();
    for (const file of manifest.files) {
      const path = join(dataDir(), 'gsm8k', file.name);
      if (fullData) expect([file.name, await fileSha256(path)]).toStrictEqual([file.name, file.sha256]);
      else expect((await gsm8kDataset.load(file.name.replace('.jsonl', ''), ctx())).length).toBeLessThan(file.rows);
      expect(manifest.base_url).toContain(manifest.revision);
      expect(manifest.base_url.endsWith(file.path.slice(0, -file.name.length - 1))).toBe(true);
    }
    expect(manifest.revision).toBe('3101c7d5072418e28b9008a6636bde82a006892c');
  });
});
