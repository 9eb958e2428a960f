/** Where a bracketed value starting at `start` ends, and its top-level items. */
export interface BracketExtent {
  /** Index just past the closing bracket; -1 when the text ends first (unterminated). */
  readonly end: number;
  /** False when a closing bracket of the wrong kind was met (the value ends there). */
  readonly balanced: boolean;
  /** [from, to) of each item between top-level commas, untrimmed. */
  readonly items: readonly (readonly [number, number])[];
}

const CLOSE: Readonly<Record<string, string>> = { '[': ']', '(': ')', '{': '}' };

/**
 * The extent of the JSON or Python value opening with the bracket at `start`, skipping strings (JSON's
 * double quotes, Python's single, double and triple quotes, with backslash escapes), so the value can be
 * cut out of surrounding text before it is parsed, and each item of a list parsed on its own.
 */
export function bracketExtent(text: string, start: number, python = false): BracketExtent {
  const stack: string[] = [];
  const items: [number, number][] = [];
  let itemStart = start + 1;
  for (let i = start; i < text.length; i++) {
    const char = text[i]!;
    if (char === '"' || (python && char === "'")) {
      i = stringEnd(text, i, python) - 1;
      if (i < 0) break;
    } else if (CLOSE[char]) stack.push(CLOSE[char]);
    else if (char === ']' || char === ')' || char === '}') {
      if (stack.pop() !== char) return { end: i + 1, balanced: false, items };
      if (stack.length === 0) {
        items.push([itemStart, i]);
        return { end: i + 1, balanced: true, items };
      }
    } else if (char === ',' && stack.length === 1) {
      items.push([itemStart, i]);
      itemStart = i + 1;
    }
  }
  return { end: -1, balanced: true, items };
}

/** Index just past the string opening at `start`, or 0 when the text ends inside it. */
function stringEnd(text: string, start: number, python: boolean): number {
  const char = text[start]!;
  const quote = python && text.startsWith(char.repeat(3), start) ? char.repeat(3) : char;
  for (let i = start + quote.length; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text.startsWith(quote, i)) return i + quote.length;
  }
  return 0;
}
