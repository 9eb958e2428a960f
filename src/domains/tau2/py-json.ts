/**
 * Python-compatible JSON text. The reference builds tool results with `json.dumps(model_dump())`
 * and hashes databases with `json.dumps(..., sort_keys=True)`; pydantic keeps each field's type,
 * so a float field prints `100.0` where an int field prints `100`. JavaScript has one number
 * type, so the caller says which keys hold floats.
 */

/** Says whether `key` of object `parent` is a float-typed field in the domain's data model. */
export type FloatField = (key: string, parent: Readonly<Record<string, unknown>>) => boolean;

export interface PyDumpOptions {
  readonly sortKeys?: boolean;
  readonly isFloat?: FloatField;
}

/**
 * `json.dumps(value)` as Python writes it: `", "` and `": "` separators, non-ASCII escaped,
 * floats in Python's repr (`100.0`, `1e-05`).
 */
export function pyDumps(value: unknown, options: PyDumpOptions = {}): string {
  const parts: string[] = [];
  write(value, false, options, parts);
  return parts.join('');
}

function write(value: unknown, asFloat: boolean, options: PyDumpOptions, out: string[]): void {
  if (value === null || value === undefined) {
    out.push('null');
  } else if (typeof value === 'string') {
    out.push(pyString(value));
  } else if (typeof value === 'number') {
    out.push(asFloat || !Number.isInteger(value) ? pyFloatRepr(value) : String(value));
  } else if (typeof value === 'boolean') {
    out.push(value ? 'true' : 'false');
  } else if (Array.isArray(value)) {
    out.push('[');
    value.forEach((item, i) => {
      if (i > 0) out.push(', ');
      write(item, false, options, out);
    });
    out.push(']');
  } else if (typeof value === 'object') {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record).filter((k) => record[k] !== undefined);
    if (options.sortKeys) keys.sort();
    out.push('{');
    keys.forEach((key, i) => {
      if (i > 0) out.push(', ');
      out.push(pyString(key), ': ');
      write(record[key], options.isFloat?.(key, record) ?? false, options, out);
    });
    out.push('}');
  } else {
    out.push(pyString(String(value)));
  }
}

/** A JSON string literal with `ensure_ascii=True` escaping, as Python's json module writes it. */
export function pyString(text: string): string {
  return JSON.stringify(text).replace(
    /[\u007f-\uffff]/g,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** Python's `repr(float)`: shortest round-trip digits, `.0` on integers, exponent below 1e-4 and from 1e16. */
export function pyFloatRepr(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (!Number.isFinite(x)) return x > 0 ? 'Infinity' : '-Infinity';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const [mantissa, expText] = x.toExponential().split('e') as [string, string];
  const exponent = Number(expText);
  const sign = mantissa.startsWith('-') ? '-' : '';
  const digits = mantissa.replace('-', '').replace('.', '');
  if (exponent < -4 || exponent >= 16) {
    const rest = digits.length > 1 ? `.${digits.slice(1)}` : '';
    return `${sign}${digits[0]}${rest}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`;
  }
  if (exponent < 0) return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`;
  const intPart = digits.slice(0, exponent + 1).padEnd(exponent + 1, '0');
  const fraction = digits.slice(exponent + 1);
  return `${sign}${intPart}.${fraction || '0'}`;
}

/**
 * Python's `round(x, 2)`: correctly rounded on the exact binary value, ties to even. `toFixed`
 * also rounds the exact value but breaks ties upwards; a tie needs x*100 to end in exactly .5,
 * which a double can only hold when x is a multiple of 1/8.
 */
export function pyRound2(x: number): number {
  const fixed = Number(x.toFixed(2));
  const scaled = x * 100;
  if (Number.isInteger(x * 8) && Math.abs(scaled % 1) === 0.5) {
    const down = Math.trunc(scaled);
    const even = down % 2 === 0 ? down : down + Math.sign(scaled);
    return even / 100;
  }
  return fixed;
}

/** Python's `str(round(float(v), 2))` for a number computed by `calculate`. */
export function pyRoundedString(x: number): string {
  return pyFloatRepr(pyRound2(x));
}
