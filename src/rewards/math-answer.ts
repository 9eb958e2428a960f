import { z } from 'zod';
import { evaluateExpression, type Rational } from '../util/calculator-eval.js';
import { parseComponentOptions } from '../util/component-options.js';
import type { RewardDefinition, RewardFn } from './types.js';

/** Where an extracted answer came from: a marked format, or the last number of the text. */
export type AnswerSource = AnswerFormat | 'last_number';
export type AnswerFormat = z.infer<typeof AnswerFormat>;
const AnswerFormat = z.enum(['gsm8k', 'answer', 'boxed']);

export const MathAnswerOptions = z.strictObject({
  formats: z
    .array(AnswerFormat)
    .default(['gsm8k', 'answer', 'boxed'])
    .describe(
      'Marked answers accepted: gsm8k (#### N), answer (Answer: N / the answer is N), boxed (\\boxed{N}). The last one in the text counts.',
    ),
  fallback_last_number: z
    .boolean()
    .default(true)
    .describe('With no marked answer, take the last number of the text (scored, but part formatted = 0).'),
  tolerance: z
    .number()
    .nonnegative()
    .default(0)
    .describe('Absolute difference still counted as equal; 0 = exact (12.0 equals 12).'),
  relative_tolerance: z
    .number()
    .nonnegative()
    .default(0)
    .describe('Difference relative to the expected answer still counted as equal.'),
});
export type MathAnswerOptions = z.infer<typeof MathAnswerOptions>;

/**
 * Reward `math_answer`: GSM8K-compatible numeric comparison of the final assistant text with
 * `task.answer`. Commas, `$` and typographic minus signs are ignored; numbers compare as exact
 * rationals unless a tolerance is set. Score 1 when correct, else 0; parts `correct` and
 * `formatted` (a marked format was found); info has what was extracted and from where.
 * @throws ConfigError on bad options.
 */
export const mathAnswerReward: RewardDefinition = {
  name: 'math_answer',
  options: MathAnswerOptions,
  async create(options): Promise<RewardFn> {
    const parsed = parseComponentOptions(MathAnswerOptions, options, 'reward.options');
    return async (outcome) => {
      const expected = outcome.task.answer;
      if (typeof expected !== 'string' && typeof expected !== 'number') {
        throw new Error(`task ${outcome.task.id} has no answer for math_answer`);
      }
      const verdict = judgeMathAnswer(outcome.finalText, expected, parsed);
      return {
        score: verdict.correct ? 1 : 0,
        parts: {
          correct: verdict.correct ? 1 : 0,
          formatted: verdict.source !== undefined && verdict.source !== 'last_number' ? 1 : 0,
        },
        info: { extracted: verdict.extracted ?? null, expected: String(expected), source: verdict.source ?? 'none' },
      };
    };
  },
};

/** The verdict on one answer text. */
export interface MathVerdict {
  readonly correct: boolean;
  /** The normalised extracted number (`-1234.5`), when one was found. */
  readonly extracted?: string;
  readonly source?: AnswerSource;
}

/**
 * Extract the answer from `text` and compare it with `expected` (a number or numeric text such as `1,234`).
 * @throws Error when `expected` is not a number.
 */
export function judgeMathAnswer(
  text: string,
  expected: string | number,
  options: MathAnswerOptions = MathAnswerOptions.parse({}),
): MathVerdict {
  const want = toRational(normalizeNumber(String(expected)));
  if (want === undefined) throw new Error(`expected answer ${JSON.stringify(String(expected))} is not a number`);
  const found = extractAnswer(text, options);
  if (!found) return { correct: false };
  const got = toRational(found.value);
  return { correct: got !== undefined && equal(got, want, options), extracted: found.value, source: found.source };
}

const NUMBER = String.raw`[-−]?\$?\s?[-−]?(?:\d[\d,]*(?:\.\d+)?|\.\d+)`;
const FORMAT_PATTERNS: Readonly<Record<AnswerFormat, RegExp>> = {
  gsm8k: new RegExp(String.raw`####\s*(${NUMBER})`, 'g'),
  answer: new RegExp(String.raw`\banswer(?:\s+is)?\s*[:=]?\s*\**\s*(${NUMBER})`, 'gi'),
  boxed: new RegExp(String.raw`\\boxed\{\s*(${NUMBER})\s*\}`, 'g'),
};
const ANY_NUMBER = new RegExp(NUMBER, 'g');

/** The last marked answer of any enabled format (by position in the text), else the last number when allowed. */
export function extractAnswer(
  text: string,
  options: Pick<MathAnswerOptions, 'formats' | 'fallback_last_number'>,
): { value: string; source: AnswerSource } | undefined {
  let best: { at: number; value: string; source: AnswerSource } | undefined;
  for (const format of options.formats) {
    for (const match of text.matchAll(FORMAT_PATTERNS[format])) {
      if (!best || match.index >= best.at)
        best = { at: match.index, value: normalizeNumber(match[1]!), source: format };
    }
  }
  if (best) return { value: best.value, source: best.source };
  if (!options.fallback_last_number) return undefined;
  const last = [...text.matchAll(ANY_NUMBER)].at(-1);
  return last ? { value: normalizeNumber(last[0]), source: 'last_number' } : undefined;
}

/** `$1,234.50` -> `1234.50`, `−$5` -> `-5`: drop `$`, commas and spaces, unify the minus sign. */
export function normalizeNumber(text: string): string {
  const cleaned = text
    .trim()
    .replace(/[$,\s]/g, '')
    .replace(/−/g, '-');
  return cleaned.startsWith('--') ? cleaned.slice(2) : cleaned;
}

function toRational(text: string): Rational | undefined {
  if (!/^-?(?:\d+(?:\.\d+)?|\.\d+)$/.test(text)) return undefined;
  return evaluateExpression(text);
}

function equal(
  a: Rational,
  b: Rational,
  options: Pick<MathAnswerOptions, 'tolerance' | 'relative_tolerance'>,
): boolean {
  if (a.num === b.num && a.den === b.den) return true;
  if (options.tolerance === 0 && options.relative_tolerance === 0) return false;
  const x = Number(a.num) / Number(a.den);
  const y = Number(b.num) / Number(b.den);
  return Math.abs(x - y) <= options.tolerance + options.relative_tolerance * Math.abs(y);
}
