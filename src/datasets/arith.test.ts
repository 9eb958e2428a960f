import { describe, expect, test } from 'vitest';
import { ConfigError, InputError } from '../errors/index.js';
import { arithDataset, ArithOptions, arithSplit, generateArith, type ArithData } from './arith.js';
import { arithTranscript } from './arith-transcripts.js';
import type { DatasetContext, Task } from './types.js';

const options = (overrides: Record<string, unknown> = {}): ArithOptions => ArithOptions.parse(overrides);
const ctx = (overrides: Record<string, unknown> = {}): DatasetContext => ({
  recipeDir: '.',
  dataDir: '.',
  seed: 0,
  options: overrides,
});
const dataOf = (task: { data: unknown }): ArithData => task.data as ArithData;

/** An independent oracle: BigInt arithmetic on the two operands. */
function oracle(expression: string): string {
  const [, a, op, b] = /^(\d+) ([-+*]) (\d+)$/.exec(expression)!;
  const [x, y] = [BigInt(a!), BigInt(b!)];
  return String(op === '+' ? x + y : op === '-' ? x - y : x * y);
}

describe('generateArith', () => {
  test('returns the same tasks for the same options, other tasks for another seed', () => {
    const first = generateArith('train', options({ train_size: 300 }));
    expect(generateArith('train', options({ train_size: 300 }))).toStrictEqual(first);
    expect(generateArith('train', options({ train_size: 300, seed: 1 })).map((t) => t.id)).not.toStrictEqual(
      first.map((t) => t.id),
    );
    expect(first).toHaveLength(300);
    expect(new Set(first.map((t) => t.id)).size).toBe(300);
  });

  test('returns splits that never share an expression, even across difficulty options', () => {
    const train = generateArith('train', options({ max_digits: 2, train_size: 3000 }));
    const test3 = generateArith('test', options({ max_digits: 3, test_size: 1000 }));
    const trainExpressions = new Set(train.map((t) => dataOf(t).expression));
    expect(test3.filter((t) => trainExpressions.has(dataOf(t).expression))).toStrictEqual([]);
    expect(train.every((t) => arithSplit(dataOf(t).expression, 0.2) === 'train')).toBe(true);
    expect(test3.every((t) => arithSplit(dataOf(t).expression, 0.2) === 'test')).toBe(true);
  });

  test('returns about test_fraction of all problems in the test split', () => {
    let held = 0;
    for (let a = 0; a < 100; a++) for (let b = 0; b < 100; b++) if (arithSplit(`${a} + ${b}`, 0.2) === 'test') held++;
    expect(held / 10_000).toBeGreaterThan(0.18);
    expect(held / 10_000).toBeLessThan(0.22);
  });

  test('returns correct answers, operands within the digit bounds and non-negative differences', () => {
    const tasks = generateArith('train', options({ min_digits: 2, max_digits: 4, train_size: 2000 }));
    for (const task of tasks) {
      const { expression, digits } = dataOf(task);
      expect(task.answer, expression).toBe(oracle(expression));
      const operands = expression.split(/ [-+*] /).map((n) => n.length);
      expect(Math.min(...operands)).toBeGreaterThanOrEqual(2);
      expect(Math.max(...operands)).toBe(digits);
      expect(digits).toBeLessThanOrEqual(4);
      expect(Number(task.answer)).toBeGreaterThanOrEqual(0);
    }
    expect(new Set(tasks.map((t) => dataOf(t).digits))).toStrictEqual(new Set([2, 3, 4]));
  });

  test('returns each requested level, with bare questions and word problems', () => {
    const tasks = generateArith(
      'train',
      options({ levels: ['add', 'sub', 'mul', 'word'], max_digits: 2, train_size: 400 }),
    );
    const byLevel = (level: string): Task[] => tasks.filter((t) => dataOf(t).level === level);
    expect(new Set(tasks.map((t) => dataOf(t).level))).toStrictEqual(new Set(['add', 'mul', 'sub', 'word']));
    const add = byLevel('add')[0]!;
    expect(add.prompt).toBe(`What is ${dataOf(add).expression}?`);
    for (const word of byLevel('word')) {
      const [a, , b] = dataOf(word).expression.split(' ');
      expect(word.prompt).toMatch(new RegExp(`^[A-Z][a-z]+ (has|buys) ${a} .*\\b${b}\\b.*\\?$`));
      expect(word.id).toMatch(/^word:\d+[-+*]\d+$/);
    }
  });

  test('returns fewer tasks when the problem space is small, without looping forever', () => {
    const train = generateArith('train', options({ levels: ['add'], max_digits: 1, train_size: 5000 }));
    const test1 = generateArith('test', options({ levels: ['add'], max_digits: 1, test_size: 5000 }));
    expect(train.length + test1.length).toBe(100);
    expect(test1.length).toBeGreaterThan(5);
  });

  test('returns the reference transcript of each task in data.reference', () => {
    const [task] = generateArith('test', options({ levels: ['mul'], test_size: 1 }));
    const { expression } = dataOf(task!);
    expect(dataOf(task!).reference).toStrictEqual(arithTranscript({ prompt: task!.prompt, expression }));
    expect(dataOf(task!).reference.at(-1)).toStrictEqual({ role: 'assistant', content: `Answer: ${task!.answer}` });
  });

  test('returns references that slip on about reference_slips of the long-operand problems and on no others', () => {
    const clean = generateArith('train', options({ train_size: 2000 }));
    const sloppy = generateArith('train', options({ train_size: 2000, reference_slips: 0.6 }));
    expect(sloppy.map((t) => [t.id, t.prompt, t.answer])).toStrictEqual(clean.map((t) => [t.id, t.prompt, t.answer]));
    let long = 0;
    let slipped = 0;
    for (const task of sloppy) {
      const { expression, digits, reference } = dataOf(task);
      const call = reference[1]!.tool_calls![0]!.function.arguments as { expression: string };
      if (digits < 3) {
        expect(reference).toStrictEqual(arithTranscript({ prompt: task.prompt, expression }));
        continue;
      }
      long++;
      if (call.expression === expression) continue;
      slipped++;
      // every 3-digit operand lost its last digit; the tool output and the answer follow the slip
      expect(call.expression).toBe(expression.replace(/\d{3,}/g, (n) => n.slice(0, -1)));
      expect(reference[2]!.content).toBe(oracle(call.expression));
      expect(reference[3]!.content).toBe(`Answer: ${oracle(call.expression)}`);
    }
    expect(long).toBeGreaterThan(1000);
    expect(slipped / long).toBeGreaterThan(0.55);
    expect(slipped / long).toBeLessThan(0.65);
  });
});

describe('arithTranscript', () => {
  test('returns question, calculator call, tool result and answer', () => {
    expect(arithTranscript({ prompt: 'What is 12 + 30?', expression: '12 + 30' })).toStrictEqual([
      { role: 'user', content: 'What is 12 + 30?' },
      {
        role: 'assistant',
        content: '',
        tool_calls: [
          { id: 'call_0', type: 'function', function: { name: 'calculator', arguments: { expression: '12 + 30' } } },
        ],
      },
      { role: 'tool', content: '42', tool_call_id: 'call_0', name: 'calculator' },
      { role: 'assistant', content: 'Answer: 42' },
    ]);
  });
});

describe('arithDataset', () => {
  test('returns train and test tasks from recipe options', async () => {
    const tasks = await arithDataset.load('test', ctx({ test_size: 20 }));
    expect(tasks).toStrictEqual(generateArith('test', options({ test_size: 20 })));
  });

  test('rejects unknown splits and invalid options', async () => {
    await expect(arithDataset.load('validation', ctx())).rejects.toThrow(InputError);
    await expect(arithDataset.load('train', ctx({ min_digits: 3, max_digits: 2 }))).rejects.toThrow(
      /dataset\.options\.min_digits: min_digits must not exceed/,
    );
    await expect(arithDataset.load('train', ctx({ digits: 3 }))).rejects.toThrow(ConfigError);
  });
});
