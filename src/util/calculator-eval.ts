/**
 * The calculator's evaluator: a tokenizer and recursive-descent parser over exact rationals
 * (BigInt numerator/denominator). Nothing here evaluates code; the only inputs are numbers and
 * the operators below, so hostile text is a syntax error, never an action.
 *
 * Syntax, with Python's precedence and meaning:
 * - numbers: `12`, `3.5`, `.5`, digit groups `1,234,567` (GSM8K writes them); no exponent notation
 * - `+ - * /`, `%` (modulo with the divisor's sign, as Python: `-7 % 3 = 2`; write percentages as `/100`)
 * - `**` or `^` (power, right-associative, integer exponents only; `-2**2 = -4`)
 * - unary `+`/`-`, parentheses; `×`, `÷` and `−` are read as `*`, `/` and `-`
 *
 * Results are exact; a non-terminating fraction is rounded half away from zero to 10 decimals.
 */

/** A bad expression; its message is what the model reads after `Error: `. */
export class CalculatorError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CalculatorError';
  }
}

/** Bounds that keep hostile input cheap: text length, nesting depth, literal and result size. */
export interface CalculatorLimits {
  readonly maxLength: number;
  readonly maxDepth: number;
  /** Largest magnitude (in bits) of any numerator or denominator, ~1,000 decimal digits by default. */
  readonly maxBits: number;
}

export const DEFAULT_CALCULATOR_LIMITS: CalculatorLimits = { maxLength: 1000, maxDepth: 100, maxBits: 3400 };

/**
 * Evaluate `expression` and format the result (`42`, `-3`, `2.5`, `0.3333333333`).
 * @throws CalculatorError on syntax errors, division by zero, non-integer exponents or oversize numbers.
 */
export function calculate(expression: string, limits: CalculatorLimits = DEFAULT_CALCULATOR_LIMITS): string {
  return formatRational(evaluateExpression(expression, limits));
}

/** An exact rational: `den > 0`, `gcd(num, den) = 1`. */
export interface Rational {
  readonly num: bigint;
  readonly den: bigint;
}

/**
 * Parse and evaluate to an exact rational.
 * @throws CalculatorError as {@link calculate}.
 */
export function evaluateExpression(expression: string, limits: CalculatorLimits = DEFAULT_CALCULATOR_LIMITS): Rational {
  if (expression.length > limits.maxLength)
    throw new CalculatorError(`expression longer than ${limits.maxLength} characters`);
  const tokens = tokenize(expression);
  if (tokens.length === 1) throw new CalculatorError('empty expression');
  return new Parser(tokens, limits).parseAll();
}

const DECIMALS = 10;

/** Integer as is; a terminating or rounded fraction as a decimal without trailing zeros. */
export function formatRational(value: Rational): string {
  const { num, den } = value;
  if (den === 1n) return num.toString();
  const negative = num < 0n;
  const scale = 10n ** BigInt(DECIMALS);
  const scaled = abs(num) * scale;
  let q = scaled / den;
  if ((scaled % den) * 2n >= den) q += 1n;
  const whole = q / scale;
  const frac = (q % scale).toString().padStart(DECIMALS, '0').replace(/0+$/, '');
  const text = frac ? `${whole}.${frac}` : whole.toString();
  return negative && q !== 0n ? `-${text}` : text;
}

type Token =
  | { readonly kind: 'num'; readonly value: Rational; readonly at: number }
  | { readonly kind: 'op'; readonly op: string; readonly at: number }
  | { readonly kind: 'end'; readonly at: number };

const NUMBER = /\d{1,3}(?:,\d{3})+(?![\d,])(?:\.\d*)?|\d+(?:\.\d*)?|\.\d+/y;
const ALIASES: Readonly<Record<string, string>> = { '×': '*', '÷': '/', '−': '-', '^': '**' };
const MAX_LITERAL_DIGITS = 100;

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const ch = text[i]!;
    if (/\s/.test(ch)) {
      i++;
      continue;
    }
    NUMBER.lastIndex = i;
    const number = NUMBER.exec(text);
    if (number) {
      tokens.push({ kind: 'num', value: parseDecimal(number[0], i), at: i });
      i += number[0].length;
      continue;
    }
    if (text.startsWith('**', i)) {
      tokens.push({ kind: 'op', op: '**', at: i });
      i += 2;
      continue;
    }
    const op = ALIASES[ch] ?? ch;
    if ('+-*/%()'.includes(op) || op === '**') {
      tokens.push({ kind: 'op', op, at: i });
      i++;
      continue;
    }
    throw new CalculatorError(
      `unexpected character ${JSON.stringify(ch)} at position ${i + 1}; use numbers, + - * / % ** and parentheses`,
    );
  }
  tokens.push({ kind: 'end', at: text.length });
  return tokens;
}

function parseDecimal(literal: string, at: number): Rational {
  const digits = literal.replace(/,/g, '');
  const [whole = '', frac = ''] = digits.split('.');
  if (whole.length + frac.length > MAX_LITERAL_DIGITS)
    throw new CalculatorError(`number at position ${at + 1} has more than ${MAX_LITERAL_DIGITS} digits`);
  return reduce(BigInt((whole || '0') + frac), 10n ** BigInt(frac.length));
}

class Parser {
  private position = 0;
  private depth = 0;

  constructor(
    private readonly tokens: readonly Token[],
    private readonly limits: CalculatorLimits,
  ) {}

  parseAll(): Rational {
    const value = this.sum();
    const next = this.peek();
    if (next.kind !== 'end') throw new CalculatorError(`unexpected ${describe(next)} at position ${next.at + 1}`);
    return value;
  }

  // sum := product (('+' | '-') product)*
  private sum(): Rational {
    let value = this.product();
    for (let op = this.opAhead(); op === '+' || op === '-'; op = this.opAhead()) {
      this.position++;
      const right = this.product();
      value = this.checked(op === '+' ? add(value, right) : add(value, negate(right)));
    }
    return value;
  }

  // product := unary (('*' | '/' | '%') unary)*
  private product(): Rational {
    let value = this.unary();
    for (let op = this.opAhead(); op === '*' || op === '/' || op === '%'; op = this.opAhead()) {
      const at = this.tokens[this.position]!.at;
      this.position++;
      const right = this.unary();
      if (op !== '*' && right.num === 0n)
        throw new CalculatorError(`${op === '/' ? 'division' : 'modulo'} by zero at position ${at + 1}`);
      value = this.checked(
        op === '*' ? multiply(value, right) : op === '/' ? divide(value, right) : modulo(value, right),
      );
    }
    return value;
  }

  // unary := ('+' | '-') unary | power
  private unary(): Rational {
    const op = this.opAhead();
    if (op !== '+' && op !== '-') return this.power();
    this.position++;
    const value = this.nested(() => this.unary());
    return op === '-' ? negate(value) : value;
  }

  // power := atom ('**' unary)?   (right-associative; binds tighter than a unary minus on its left)
  private power(): Rational {
    const base = this.atom();
    if (this.opAhead() !== '**') return base;
    const at = this.tokens[this.position]!.at;
    this.position++;
    const exponent = this.nested(() => this.unary());
    return this.checked(power(base, exponent, at, this.limits.maxBits));
  }

  // atom := NUMBER | '(' sum ')'
  private atom(): Rational {
    const token = this.peek();
    if (token.kind === 'num') {
      this.position++;
      return this.checked(token.value);
    }
    if (token.kind === 'op' && token.op === '(') {
      this.position++;
      const value = this.nested(() => this.sum());
      const close = this.peek();
      if (close.kind !== 'op' || close.op !== ')')
        throw new CalculatorError(`expected ')' at position ${close.at + 1}, found ${describe(close)}`);
      this.position++;
      return value;
    }
    throw new CalculatorError(`expected a number or '(' at position ${token.at + 1}, found ${describe(token)}`);
  }

  private nested(parse: () => Rational): Rational {
    if (++this.depth > this.limits.maxDepth)
      throw new CalculatorError(`expression nested deeper than ${this.limits.maxDepth} levels`);
    try {
      return parse();
    } finally {
      this.depth--;
    }
  }

  private peek(): Token {
    return this.tokens[this.position]!;
  }

  private opAhead(): string | undefined {
    const token = this.peek();
    return token.kind === 'op' ? token.op : undefined;
  }

  private checked(value: Rational): Rational {
    if (bits(value.num) > this.limits.maxBits || bits(value.den) > this.limits.maxBits)
      throw new CalculatorError('number too large');
    return value;
  }
}

function describe(token: Token): string {
  return token.kind === 'end' ? 'end of expression' : token.kind === 'op' ? `'${token.op}'` : 'a number';
}

function power(base: Rational, exponent: Rational, at: number, maxBits: number): Rational {
  if (exponent.den !== 1n) throw new CalculatorError(`exponent at position ${at + 1} must be a whole number`);
  const e = abs(exponent.num);
  // Refuse before computing: the result has about bits(base) * e bits.
  if (e > 0n && BigInt(Math.max(bits(base.num), bits(base.den)) - 1) * e > BigInt(maxBits))
    throw new CalculatorError('number too large');
  if (exponent.num < 0n && base.num === 0n) throw new CalculatorError(`division by zero at position ${at + 1}`);
  const raised = { num: base.num ** e, den: base.den ** e };
  return exponent.num < 0n ? divide({ num: 1n, den: 1n }, raised) : raised;
}

function reduce(num: bigint, den: bigint): Rational {
  if (den < 0n) [num, den] = [-num, -den];
  const g = gcd(abs(num), den);
  return g > 1n ? { num: num / g, den: den / g } : { num, den };
}

function gcd(a: bigint, b: bigint): bigint {
  while (b !== 0n) [a, b] = [b, a % b];
  return a === 0n ? 1n : a;
}

function abs(x: bigint): bigint {
  return x < 0n ? -x : x;
}

/** Exact bit length (0 for 0). */
function bits(x: bigint): number {
  return x === 0n ? 0 : abs(x).toString(2).length;
}

function add(a: Rational, b: Rational): Rational {
  return reduce(a.num * b.den + b.num * a.den, a.den * b.den);
}

function negate(a: Rational): Rational {
  return { num: -a.num, den: a.den };
}

function multiply(a: Rational, b: Rational): Rational {
  return reduce(a.num * b.num, a.den * b.den);
}

function divide(a: Rational, b: Rational): Rational {
  return reduce(a.num * b.den, a.den * b.num);
}

/** Python's `%`: a - b * floor(a / b), so the result takes the divisor's sign. */
function modulo(a: Rational, b: Rational): Rational {
  const q = divide(a, b);
  let floor = q.num / q.den;
  if (q.num < 0n && q.num % q.den !== 0n) floor -= 1n;
  return add(a, negate(multiply(b, { num: floor, den: 1n })));
}
