import { z } from 'zod';
import { InputError } from '../errors/index.js';
import { calculate } from '../util/calculator-eval.js';
import { parseComponentOptions } from '../util/component-options.js';
import { createRng, hash32 } from '../util/random.js';
import { arithTranscript } from './arith-transcripts.js';
import type { DatasetDefinition, Task } from './types.js';

/** A kind of problem: a bare operation (`What is 12 + 30?`) or a short word problem using one of them. */
export const ArithLevel = z.enum(['add', 'sub', 'mul', 'word']);
export type ArithLevel = z.infer<typeof ArithLevel>;

export const ArithOptions = z
  .strictObject({
    levels: z
      .array(ArithLevel)
      .min(1)
      .default(['add', 'sub', 'mul'])
      .describe('Problem kinds drawn with equal probability: add, sub, mul, word.'),
    min_digits: z.number().int().min(1).max(12).default(1).describe('Fewest digits of an operand.'),
    max_digits: z
      .number()
      .int()
      .min(1)
      .max(12)
      .default(3)
      .describe('Most digits of an operand; each operand draws its digit count uniformly.'),
    train_size: z
      .number()
      .int()
      .positive()
      .default(5000)
      .describe('Problems in the train split (fewer when the space is small).'),
    test_size: z.number().int().positive().default(200).describe('Problems in the test split.'),
    test_fraction: z
      .number()
      .gt(0)
      .lt(1)
      .default(0.2)
      .describe('Share of all possible problems held out for test, chosen by a hash of the expression.'),
    seed: z.number().int().nonnegative().default(0).describe('Seed of the problem set; the run seed only orders it.'),
    reference_slips: z
      .number()
      .min(0)
      .max(1)
      .default(0)
      .describe(
        'Share of reference transcripts (what the sft warm start imitates) of problems with a 3-or-more-digit operand in which the demonstrator drops the last digit of each such operand when copying it into the calculator call; the result and the answer follow the slip. A sloppy teacher that RL can learn to beat. Prompts, answers and rewards are unchanged.',
      ),
  })
  // Only when both counts are valid: a bad max_digits alone must not also report min_digits.
  .refine((o) => o.min_digits <= o.max_digits, {
    message: 'min_digits must not exceed max_digits',
    path: ['min_digits'],
    when: (payload) => payload.issues.length === 0,
  });
export type ArithOptions = z.infer<typeof ArithOptions>;

/** `task.data` of an arith task; `reference` is the perfect transcript the `sft` warm start trains on. */
export type ArithData = {
  readonly expression: string;
  readonly level: ArithLevel;
  /** Digits of the longest operand: accuracy by digits shows what RL improved. */
  readonly digits: number;
  readonly reference: ReturnType<typeof arithTranscript>;
};

/**
 * Dataset `arith`: generated arithmetic for tool use, splits `train` and `test`. Which split a
 * problem belongs to is a hash of its expression alone, so no test problem is ever trained on,
 * whatever the options (a 2-digit warm start and a 3-digit RL run share one held-out set).
 *
 * Difficulty for a tiny model is copying digits into the call and out of the result; a probe with a
 * 0.9M-parameter qwen2 found that a warm start on `max_digits: 2` plateaus stably (47.5% held out on
 * a 1-3 digit mix: perfect on 1-2 digit operands, wrong on 3-digit ones), leaving RL on
 * `max_digits: 3` room to climb (to 77.5% in 10 minutes of GRPO on 2 CPU cores).
 * @throws InputError for a split other than train/test; ConfigError for bad options.
 */
export const arithDataset: DatasetDefinition = {
  name: 'arith',
  options: ArithOptions,
  async load(split, ctx): Promise<Task[]> {
    if (split !== 'train' && split !== 'test')
      throw new InputError(`dataset arith has splits train and test, not '${split}'`);
    return generateArith(split, parseComponentOptions(ArithOptions, ctx.options, 'dataset.options'));
  },
};

/** The tasks of one split, a pure function of the options: distinct problems in a seeded order. */
export function generateArith(split: 'train' | 'test', options: ArithOptions): Task[] {
  const size = split === 'train' ? options.train_size : options.test_size;
  const rng = createRng(hash32(options.seed, 'arith', split));
  const tasks = new Map<string, Task>();
  // Bounded so a small problem space (1-digit addition) yields fewer tasks instead of looping forever.
  for (let attempt = 0; attempt < size * 50 && tasks.size < size; attempt++) {
    const problem = drawProblem(rng, options);
    if (arithSplit(problem.expression, options.test_fraction) !== split || tasks.has(problem.id)) continue;
    const answer = calculate(problem.expression);
    const reference = arithTranscript({
      prompt: problem.prompt,
      expression: demonstratedExpression(problem.expression, options.reference_slips),
    });
    const data: ArithData = { expression: problem.expression, level: problem.level, digits: problem.digits, reference };
    tasks.set(problem.id, { id: problem.id, prompt: problem.prompt, answer, data });
  }
  return [...tasks.values()];
}

/** The split of an expression: test for a fixed `fraction` of all expressions, by hash. */
export function arithSplit(expression: string, fraction: number): 'train' | 'test' {
  return hash32('arith-split', expression) / 2 ** 32 < fraction ? 'test' : 'train';
}

/**
 * The expression a sloppy demonstrator copies into the call: for a `rate` share of expressions
 * (chosen by hash, so the same problems slip whatever the order) every operand of 3+ digits loses
 * its last digit. A model imitating it copies long operands right only sometimes: its greedy answer
 * is wrong there while its samples are often right, which is what RL learns from.
 */
export function demonstratedExpression(expression: string, rate: number): string {
  if (rate === 0 || hash32('arith-slip', expression) / 2 ** 32 >= rate) return expression;
  return expression.replace(/\d{3,}/g, (operand) => operand.slice(0, -1));
}

interface Problem {
  readonly id: string;
  readonly prompt: string;
  readonly expression: string;
  readonly level: ArithLevel;
  readonly digits: number;
}

const SYMBOLS = { add: '+', sub: '-', mul: '*' } as const;

function drawProblem(rng: () => number, options: ArithOptions): Problem {
  const level = pick(rng, options.levels);
  const op = level === 'word' ? pick(rng, ['add', 'sub', 'mul'] as const) : level;
  const [da, db] = [digitsBetween(rng, options), digitsBetween(rng, options)];
  let [a, b] = [numberWithDigits(rng, da), numberWithDigits(rng, db)];
  // Subtraction keeps results non-negative, so word problems about things left stay sensible.
  if (op === 'sub' && a < b) [a, b] = [b, a];
  const expression = `${a} ${SYMBOLS[op]} ${b}`;
  const prompt = level === 'word' ? wordProblem(rng, op, a, b) : `What is ${expression}?`;
  return { id: `${level}:${a}${SYMBOLS[op]}${b}`, prompt, expression, level, digits: Math.max(da, db) };
}

const NAMES = ['Ann', 'Bob', 'Tom', 'Sue', 'Max', 'Eva'] as const;
const THINGS = ['apples', 'pens', 'cards', 'eggs', 'coins', 'books'] as const;

function wordProblem(rng: () => number, op: 'add' | 'sub' | 'mul', a: number, b: number): string {
  const name = pick(rng, NAMES);
  const things = pick(rng, THINGS);
  if (op === 'add') return `${name} has ${a} ${things} and gets ${b} more. How many ${things} now?`;
  if (op === 'sub') return `${name} has ${a} ${things} and gives away ${b}. How many are left?`;
  return `${name} buys ${a} bags of ${b} ${things}. How many ${things}?`;
}

function digitsBetween(rng: () => number, options: ArithOptions): number {
  return options.min_digits + Math.floor(rng() * (options.max_digits - options.min_digits + 1));
}

/** Uniform over numbers with exactly `digits` digits (0-9 for one digit). */
function numberWithDigits(rng: () => number, digits: number): number {
  const low = digits === 1 ? 0 : 10 ** (digits - 1);
  return low + Math.floor(rng() * (10 ** digits - low));
}

function pick<T>(rng: () => number, items: readonly T[]): T {
  return items[Math.floor(rng() * items.length)]!;
}
