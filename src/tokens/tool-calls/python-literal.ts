import { MAX_ARGUMENT_DEPTH } from './call-result.js';

/** Why Python source could not be read as a literal: bad syntax, or nesting past `MAX_ARGUMENT_DEPTH`. */
export class LiteralError extends Error {
  constructor(
    message: string,
    readonly kind: 'syntax' | 'depth',
  ) {
    super(message);
  }
}

/**
 * The value of one Python literal (what `ast.literal_eval` accepts, as JSON): strings (quotes, triple
 * quotes, `r` prefix, escapes, adjacent strings joined), numbers (underscores, hex/octal/binary, a sign),
 * `True`/`False`/`None`, lists, tuples and dicts with literal keys. Nothing else is evaluated.
 * @throws LiteralError when the text is anything else, or more than one literal.
 */
export function parsePythonLiteral(text: string): unknown {
  const reader = new PythonReader(text);
  reader.space();
  const value = reader.literal(0);
  reader.space();
  if (!reader.done()) reader.fail('unexpected text after the value');
  return value;
}

const ESCAPES: Readonly<Record<string, string>> = {
  '\\': '\\',
  "'": "'",
  '"': '"',
  a: '\x07',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
  '\n': '',
};
const NUMBER =
  /(?:0[xX](?:_?[0-9a-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+|(?:\d(?:_?\d)*)?\.?\d(?:_?\d)*(?:[eE][+-]?\d(?:_?\d)*)?\.?)(?![\w.])/y;
const IDENTIFIER = /[A-Za-z_][A-Za-z0-9_]*/y;

/** A cursor over Python source that reads literals, names and punctuation, failing with the column it stopped at. */
export class PythonReader {
  pos: number;
  constructor(
    readonly text: string,
    start = 0,
  ) {
    this.pos = start;
  }

  done(): boolean {
    return this.pos >= this.text.length;
  }

  peek(): string {
    return this.text[this.pos] ?? '';
  }

  /** Skips white space (line breaks included: calls and literals here sit inside brackets). */
  space(): void {
    while (/\s/.test(this.peek())) this.pos++;
  }

  /** Consumes `char` (after white space) when it is next; says whether it was. */
  take(char: string): boolean {
    this.space();
    if (this.text.startsWith(char, this.pos)) {
      this.pos += char.length;
      return true;
    }
    return false;
  }

  expect(char: string): void {
    if (!this.take(char)) this.fail(`expected '${char}'`);
  }

  identifier(): string | undefined {
    this.space();
    IDENTIFIER.lastIndex = this.pos;
    const match = IDENTIFIER.exec(this.text);
    if (!match) return undefined;
    this.pos += match[0].length;
    return match[0];
  }

  fail(what: string): never {
    const found = this.done() ? 'the end' : JSON.stringify(this.text.slice(this.pos, this.pos + 10));
    throw new LiteralError(`${what} at character ${this.pos + 1}, found ${found}`, 'syntax');
  }

  /** One literal; `depth` counts the containers around it. */
  literal(depth: number): unknown {
    this.space();
    const char = this.peek();
    if (char === '[' || char === '(' || char === '{') {
      if (depth >= MAX_ARGUMENT_DEPTH)
        throw new LiteralError(`the value nests deeper than ${MAX_ARGUMENT_DEPTH} levels`, 'depth');
      return char === '{' ? this.dict(depth + 1) : this.sequence(char === '[' ? ']' : ')', depth + 1);
    }
    if (char === '"' || char === "'" || (/[rRuU]/.test(char) && /["']/.test(this.text[this.pos + 1] ?? '')))
      return this.strings();
    if (char === '-' || char === '+') {
      this.pos++;
      this.space();
      const value = this.number();
      return char === '-' ? -value : value;
    }
    if (/[\d.]/.test(char)) return this.number();
    const start = this.pos;
    const name = this.identifier();
    if (name === 'True') return true;
    if (name === 'False') return false;
    if (name === 'None') return null;
    this.pos = start;
    return this.fail('expected a literal (a string, number, True, False, None, list, tuple or dict)');
  }

  /** A list, or a tuple (as a list); `(x)` without a comma is `x` in parentheses. */
  private sequence(close: ']' | ')', depth: number): unknown {
    this.pos++;
    const items: unknown[] = [];
    let tuple = close === ']';
    while (!this.take(close)) {
      items.push(this.literal(depth));
      if (this.take(',')) tuple = true;
      else {
        this.expect(close);
        return tuple ? items : items[0];
      }
    }
    return items;
  }

  private dict(depth: number): Record<string, unknown> {
    this.pos++;
    const entries: [string, unknown][] = [];
    while (!this.take('}')) {
      this.space();
      const keyAt = this.pos;
      const key = this.literal(depth);
      if (typeof key === 'object' && key !== null) {
        this.pos = keyAt;
        this.fail('a dict key must be a string, number, True, False or None');
      }
      this.expect(':');
      entries.push([key === null ? 'null' : String(key), this.literal(depth)]);
      if (!this.take(',')) {
        this.expect('}');
        break;
      }
    }
    // fromEntries defines own properties, so a key such as "__proto__" stays a key.
    return Object.fromEntries(entries);
  }

  private number(): number {
    NUMBER.lastIndex = this.pos;
    const match = NUMBER.exec(this.text);
    // Python rejects a decimal integer with leading zeros (`007`), not a float (`01.5`).
    if (!match || match[0] === '.' || /^0[\d_]*[1-9][\d_]*$/.test(match[0])) this.fail('expected a number');
    this.pos += match[0].length;
    const digits = match[0].replace(/_/g, '');
    const value = /^0[oObB]/.test(digits)
      ? Number.parseInt(digits.slice(2), digits[1] === 'o' || digits[1] === 'O' ? 8 : 2)
      : Number(digits);
    if (!Number.isFinite(value)) this.fail('the number is out of range');
    return value;
  }

  /** One string literal or several adjacent ones, joined as Python joins them. */
  private strings(): string {
    let value = this.string();
    for (;;) {
      const at = this.pos;
      this.space();
      const char = this.peek();
      if (char === '"' || char === "'" || (/[rRuU]/.test(char) && /["']/.test(this.text[this.pos + 1] ?? '')))
        value += this.string();
      else {
        this.pos = at;
        return value;
      }
    }
  }

  private string(): string {
    let raw = false;
    if (/[rRuU]/.test(this.peek())) raw = /[rR]/.test(this.text[this.pos++]!);
    const quote = this.text.startsWith(this.peek().repeat(3), this.pos) ? this.peek().repeat(3) : this.peek();
    const start = this.pos;
    this.pos += quote.length;
    let value = '';
    for (;;) {
      if (this.done()) {
        this.pos = start;
        this.fail('the string is not closed');
      }
      if (this.text.startsWith(quote, this.pos)) {
        this.pos += quote.length;
        return value;
      }
      const char = this.text[this.pos]!;
      if (char === '\n' && quote.length === 1) this.fail('a line break inside a one-quote string');
      if (char !== '\\') {
        value += char;
        this.pos++;
      } else if (raw) {
        value += this.text.slice(this.pos, this.pos + 2);
        this.pos += 2;
      } else value += this.escape();
    }
  }

  private escape(): string {
    const next = this.text[this.pos + 1] ?? '';
    this.pos += 2;
    const simple = ESCAPES[next];
    if (simple !== undefined) return simple;
    const hexLength = next === 'x' ? 2 : next === 'u' ? 4 : next === 'U' ? 8 : 0;
    if (hexLength > 0) {
      const hex = this.text.slice(this.pos, this.pos + hexLength);
      if (!new RegExp(`^[0-9a-fA-F]{${hexLength}}$`).test(hex))
        this.fail(`a \\${next} escape needs ${hexLength} hex digits`);
      const code = Number.parseInt(hex, 16);
      if (code > 0x10ffff) this.fail('the escape is past the last code point');
      this.pos += hexLength;
      return String.fromCodePoint(code);
    }
    if (/[0-7]/.test(next)) {
      const octal = /^[0-7]{0,2}/.exec(this.text.slice(this.pos, this.pos + 2))![0];
      this.pos += octal.length;
      return String.fromCharCode(Number.parseInt(next + octal, 8));
    }
    if (next === 'N') this.fail('named \\N{...} escapes are not supported');
    // Python keeps an unknown escape as written.
    return `\\${next}`;
  }
}

/** A JSON value written as a Python literal (strings in double quotes with JSON's escapes, which Python reads alike). */
export function pythonLiteral(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'number' || typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(pythonLiteral).join(', ')}]`;
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${pythonLiteral(v)}`).join(', ')}}`;
}
