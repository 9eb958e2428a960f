import { execFileSync } from 'node:child_process';
import { describe, expect, test } from 'vitest';
import { createRng } from './random.js';
import { calculate, CalculatorError, evaluateExpression, formatRational } from './calculator-eval.js';

function rejects(expression: string, message: RegExp): void {
  expect(() => calculate(expression)).toThrow(CalculatorError);
  expect(() => calculate(expression)).toThrow(message);
}

describe('calculate', () => {
  test('returns integer results of the four operations with Python precedence', () => {
    const cases: [string, string][] = [
      ['12 + 30', '42'],
      ['100 - 250', '-150'],
      ['987 * 654', '645498'],
      ['84 / 2', '42'],
      ['2 + 3 * 4', '14'],
      ['(2 + 3) * 4', '20'],
      ['10 - 4 - 3', '3'],
      ['48 / 4 / 2', '6'],
      ['  7*(  8 -2 )  ', '42'],
    ];
    for (const [expression, result] of cases)
      expect([expression, calculate(expression)]).toStrictEqual([expression, result]);
  });

  test('returns exact results beyond 2^53', () => {
    expect(calculate('123456789012345678 * 987654321098765432')).toBe('121932631137021794322511812221002896');
    expect(calculate('2 ** 64')).toBe('18446744073709551616');
    expect(calculate('(10 ** 20 + 1) - 10 ** 20')).toBe('1');
  });

  test('returns exact decimals where binary floats are off', () => {
    expect(calculate('0.1 + 0.2')).toBe('0.3');
    expect(calculate('1.1 * 1.1')).toBe('1.21');
    expect(calculate('7 / 2')).toBe('3.5');
    expect(calculate('.5 + 3.')).toBe('3.5');
    expect(calculate('0.3 - 0.1 - 0.2')).toBe('0');
  });

  test('returns non-terminating fractions rounded to 10 decimals, half away from zero', () => {
    expect(calculate('1 / 3')).toBe('0.3333333333');
    expect(calculate('2 / 3')).toBe('0.6666666667');
    expect(calculate('-2 / 3')).toBe('-0.6666666667');
    expect(calculate('1 / 30000000000000')).toBe('0');
  });

  test('returns unary minus, power and modulo with Python semantics', () => {
    const cases: [string, string][] = [
      ['-5 + 3', '-2'],
      ['--5', '5'],
      ['-(2 + 3)', '-5'],
      ['+4', '4'],
      ['-2 ** 2', '-4'],
      ['2 ** -1', '0.5'],
      ['2 ** 3 ** 2', '512'],
      ['2 ^ 10', '1024'],
      ['(-2) ** 3', '-8'],
      ['0 ** 0', '1'],
      ['7 % 3', '1'],
      ['-7 % 3', '2'],
      ['7 % -3', '-2'],
      ['7.5 % 2', '1.5'],
      ['3 * -2', '-6'],
    ];
    for (const [expression, result] of cases)
      expect([expression, calculate(expression)]).toStrictEqual([expression, result]);
  });

  test('returns results for digit-grouped numbers and typographic operators', () => {
    expect(calculate('1,234 + 1')).toBe('1235');
    expect(calculate('1,234,567.5 * 2')).toBe('2469135');
    expect(calculate('6 × 7')).toBe('42');
    expect(calculate('84 ÷ 2')).toBe('42');
    expect(calculate('50 − 8')).toBe('42');
  });

  test('rejects syntax errors with the position the model can fix', () => {
    rejects('', /empty expression/);
    rejects('   ', /empty expression/);
    rejects('2 +', /expected a number or '\(' at position 4, found end of expression/);
    rejects('(2 + 3', /expected '\)' at position 7/);
    rejects('2 + 3)', /unexpected '\)' at position 6/);
    rejects('2 3', /unexpected a number at position 3/);
    rejects('2(3)', /unexpected '\(' at position 2/);
    rejects('* 3', /expected a number/);
    rejects('1,23 + 4', /unexpected character ","/);
    rejects('12 = 12', /unexpected character "=" at position 4/);
  });

  test('rejects division and modulo by zero, and fractional exponents', () => {
    rejects('1 / 0', /division by zero at position 3/);
    rejects('1 / (2 - 2)', /division by zero/);
    rejects('5 % 0', /modulo by zero/);
    rejects('0 ** -1', /division by zero/);
    rejects('4 ** 0.5', /exponent at position 3 must be a whole number/);
  });

  test('rejects code, property names and other hostile text as unexpected characters', () => {
    for (const hostile of [
      'process.exit()',
      'constructor',
      '(1).constructor.constructor("return process")()',
      'require("child_process").execSync("id")',
      '__proto__',
      'globalThis',
      '1; process.exit(1)',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: template syntax the calculator must refuse
      '`${1}`',
      '0x10',
      '1e308',
      'Infinity',
      'NaN',
      '\u0000',
    ]) {
      expect(() => calculate(hostile), hostile).toThrow(CalculatorError);
    }
  });

  test('rejects huge exponents and results before computing them', () => {
    rejects('10 ** 1000000000000', /number too large/);
    rejects('2 ** 2 ** 2 ** 2 ** 2', /number too large/);
    rejects('9 ** 9 ** 9', /number too large/);
    rejects('0.5 ** -100000', /number too large/);
    expect(calculate('1 ** 1000000000000')).toBe('1');
    expect(calculate('(-1) ** 1000000000001')).toBe('-1');
    expect(calculate('10 ** 900').length).toBe(901);
  });

  test('rejects repeated multiplication growing past the size limit', () => {
    const big = '9'.repeat(100);
    const product = Array.from({ length: 40 }, () => big).join(' * ');
    expect(() => calculate(product, { maxLength: 10_000, maxDepth: 100, maxBits: 3400 })).toThrow(/number too large/);
  });

  test('rejects very long input, very long literals and deep nesting', () => {
    rejects('1+'.repeat(600) + '1', /longer than 1000 characters/);
    rejects('1'.repeat(101), /more than 100 digits/);
    rejects('('.repeat(150) + '1' + ')'.repeat(150), /nested deeper than 100 levels/);
    rejects('-'.repeat(200) + '1', /nested deeper than 100 levels/);
    expect(calculate('('.repeat(50) + '1' + ')'.repeat(50))).toBe('1');
  });

  test('returns results within the limits given', () => {
    expect(() => calculate('1 + 1', { maxLength: 3, maxDepth: 10, maxBits: 64 })).toThrow(/longer than 3 characters/);
    expect(() => calculate('2 ** 70', { maxLength: 100, maxDepth: 10, maxBits: 64 })).toThrow(/number too large/);
  });
});

describe('evaluateExpression', () => {
  test('returns reduced rationals with a positive denominator', () => {
    expect(evaluateExpression('6 / -4')).toStrictEqual({ num: -3n, den: 2n });
    expect(evaluateExpression('0.25 * 8')).toStrictEqual({ num: 2n, den: 1n });
  });
});

describe('formatRational', () => {
  test('returns a rounded value that rounds to zero without a minus sign', () => {
    expect(formatRational({ num: -1n, den: 10n ** 12n })).toBe('0');
    expect(formatRational({ num: -1n, den: 8n })).toBe('-0.125');
  });
});

describe('calculate against Python', () => {
  test('returns what python3 computes for random integer expressions', () => {
    const rng = createRng(7);
    const int = (): string => String(Math.floor(rng() * 2000) - 1000);
    const expressions = Array.from({ length: 300 }, () => {
      let text = int();
      for (let k = 0; k < 1 + Math.floor(rng() * 4); k++) {
        const op = ['+', '-', '*', '%'][Math.floor(rng() * 4)]!;
        text = rng() < 0.3 ? `(${text}) ${op} ${int()}` : `${text} ${op} ${int()}`;
      }
      return text.replace(/% 0(?!\d)/g, '% 17');
    });
    const python = execFileSync(
      '/usr/bin/python3',
      ['-c', 'import sys, json\nfor e in json.load(sys.stdin): print(eval(e))'],
      { input: JSON.stringify(expressions), encoding: 'utf8' },
    );
    expect(expressions.map((e) => calculate(e))).toStrictEqual(python.trim().split('\n'));
  });
});
