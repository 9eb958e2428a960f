import { describe, expect, test } from 'vitest';
import { ConfigError } from '../errors/index.js';
import { extractAnswer, judgeMathAnswer, mathAnswerReward, MathAnswerOptions, normalizeNumber } from './math-answer.js';
import type { EpisodeOutcome } from './types.js';

const defaults = MathAnswerOptions.parse({});

function outcome(finalText: string, answer: unknown): EpisodeOutcome {
  const task = { id: 'q1', prompt: 'What is 6 * 7?', answer, data: {} };
  return {
    task,
    finalText,
    messages: [],
    toolCalls: [],
    finishReason: 'endTurn',
    env: { episodeId: 'e', task, state: new Map(), signal: new AbortController().signal },
  };
}

describe('extractAnswer', () => {
  test('returns marked answers in each format, normalised', () => {
    expect(extractAnswer('so 48 + 24 = 72\n#### 72', defaults)).toStrictEqual({ value: '72', source: 'gsm8k' });
    expect(extractAnswer('Answer: 1,234', defaults)).toStrictEqual({ value: '1234', source: 'answer' });
    expect(extractAnswer('The answer is $18.50.', defaults)).toStrictEqual({ value: '18.50', source: 'answer' });
    expect(extractAnswer('**Answer:** -5', defaults)).toStrictEqual({ value: '-5', source: 'answer' });
    expect(extractAnswer('Thus \\boxed{ 42 }', defaults)).toStrictEqual({ value: '42', source: 'boxed' });
    expect(extractAnswer('#### −$3', defaults)).toStrictEqual({ value: '-3', source: 'gsm8k' });
  });

  test('returns the marked answer that comes last in the text', () => {
    expect(extractAnswer('#### 5 then on reflection Answer: 6', defaults)).toStrictEqual({
      value: '6',
      source: 'answer',
    });
    expect(extractAnswer('Answer: 6 ... \\boxed{7} #### 8', defaults)).toStrictEqual({ value: '8', source: 'gsm8k' });
  });

  test('returns the last number only as a fallback, and only when allowed', () => {
    expect(extractAnswer('I think it is 12, no, 13 apples.', defaults)).toStrictEqual({
      value: '13',
      source: 'last_number',
    });
    expect(extractAnswer('I think it is 13.', { ...defaults, fallback_last_number: false })).toBeUndefined();
    expect(extractAnswer('no digits here', defaults)).toBeUndefined();
  });

  test('returns only the formats asked for', () => {
    expect(extractAnswer('\\boxed{3} Answer: 4', { formats: ['boxed'], fallback_last_number: false })).toStrictEqual({
      value: '3',
      source: 'boxed',
    });
    expect(extractAnswer('Answer: 4', { formats: ['gsm8k'], fallback_last_number: false })).toBeUndefined();
  });
});

describe('normalizeNumber', () => {
  test('returns the number without $, commas, spaces or typographic minus', () => {
    expect(['$1,234.50', '−7', '-$ 5', '1,000,000'].map(normalizeNumber)).toStrictEqual([
      '1234.50',
      '-7',
      '-5',
      '1000000',
    ]);
  });
});

describe('judgeMathAnswer', () => {
  test('returns correct for numerically equal answers written differently', () => {
    expect(judgeMathAnswer('Answer: 72.00', '72')).toStrictEqual({
      correct: true,
      extracted: '72.00',
      source: 'answer',
    });
    expect(judgeMathAnswer('#### 1,234', '1234')).toStrictEqual({ correct: true, extracted: '1234', source: 'gsm8k' });
    expect(judgeMathAnswer('#### 0.5', '.5').correct).toBe(true);
    expect(judgeMathAnswer('#### -3', -3).correct).toBe(true);
  });

  test('returns incorrect for a different or missing answer', () => {
    expect(judgeMathAnswer('Answer: 71', '72')).toStrictEqual({ correct: false, extracted: '71', source: 'answer' });
    expect(judgeMathAnswer('I cannot say', '72')).toStrictEqual({ correct: false });
    expect(judgeMathAnswer('Answer: 72.000001', '72').correct).toBe(false);
  });

  test('returns correct within an absolute or relative tolerance', () => {
    expect(judgeMathAnswer('Answer: 72.000001', '72', { ...defaults, tolerance: 1e-5 }).correct).toBe(true);
    expect(judgeMathAnswer('Answer: 1001', '1000', { ...defaults, relative_tolerance: 0.01 }).correct).toBe(true);
    expect(judgeMathAnswer('Answer: 1011', '1000', { ...defaults, relative_tolerance: 0.01 }).correct).toBe(false);
  });

  test('rejects an expected answer that is not a number', () => {
    expect(() => judgeMathAnswer('Answer: 1', 'seven')).toThrow(/"seven" is not a number/);
  });
});

describe('mathAnswerReward', () => {
  test('returns score 1 with parts correct and formatted for a marked right answer', async () => {
    const reward = await mathAnswerReward.create({}, { recipeDir: '.', warn: () => {} });
    expect(await reward(outcome('Answer: 42', '42'))).toStrictEqual({
      score: 1,
      parts: { correct: 1, formatted: 1 },
      info: { extracted: '42', expected: '42', source: 'answer' },
    });
  });

  test('returns formatted 0 for a right answer found only as the last number', async () => {
    const reward = await mathAnswerReward.create({}, { recipeDir: '.', warn: () => {} });
    expect(await reward(outcome('It is 42', 42))).toStrictEqual({
      score: 1,
      parts: { correct: 1, formatted: 0 },
      info: { extracted: '42', expected: '42', source: 'last_number' },
    });
  });

  test('returns score 0 without the fallback when the answer is unmarked', async () => {
    const reward = await mathAnswerReward.create({ fallback_last_number: false }, { recipeDir: '.', warn: () => {} });
    expect(await reward(outcome('It is 42', '42'))).toStrictEqual({
      score: 0,
      parts: { correct: 0, formatted: 0 },
      info: { extracted: null, expected: '42', source: 'none' },
    });
  });

  test('rejects bad options and tasks without an answer', async () => {
    await expect(mathAnswerReward.create({ formats: ['latex'] }, { recipeDir: '.', warn: () => {} })).rejects.toThrow(
      ConfigError,
    );
    await expect(mathAnswerReward.create({ fallback: true }, { recipeDir: '.', warn: () => {} })).rejects.toThrow(
      /reward\.options/,
    );
    const reward = await mathAnswerReward.create({}, { recipeDir: '.', warn: () => {} });
    await expect(reward(outcome('Answer: 1', undefined))).rejects.toThrow(/task q1 has no answer/);
  });
});
