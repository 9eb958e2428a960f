/** The few terminal styles atk's plain-text views use. */
export type Style =
  | 'bold'
  | 'dim'
  | 'italic'
  | 'underline'
  | 'inverse'
  | 'red'
  | 'green'
  | 'yellow'
  | 'blue'
  | 'magenta'
  | 'cyan'
  | 'gray'
  | 'bgRed'
  | 'bgGray';

const CODES: Record<Style, readonly [number, number]> = {
  bold: [1, 22],
  dim: [2, 22],
  italic: [3, 23],
  underline: [4, 24],
  inverse: [7, 27],
  red: [31, 39],
  green: [32, 39],
  yellow: [33, 39],
  blue: [34, 39],
  magenta: [35, 39],
  cyan: [36, 39],
  gray: [90, 39],
  bgRed: [41, 49],
  bgGray: [100, 49],
};

/** Applies styles with ANSI escapes, or returns the text unchanged; one switch for TTY vs plain output. */
export type Painter = (text: string, ...styles: Style[]) => string;

/** A painter that colours when `enabled` (a TTY without NO_COLOR) and passes text through otherwise. */
export function painter(enabled: boolean): Painter {
  if (!enabled) return (text) => text;
  return (text, ...styles) => {
    if (text === '' || styles.length === 0) return text;
    const open = styles.map((s) => `\u001b[${CODES[s][0]}m`).join('');
    const close = styles
      .map((s) => `\u001b[${CODES[s][1]}m`)
      .reverse()
      .join('');
    return `${open}${text}${close}`;
  };
}

/** Whether a stream should get colour: a TTY, and neither NO_COLOR nor TERM=dumb set (FORCE_COLOR wins). */
export function wantsColor(stream: { readonly isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0') return true;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  return stream.isTTY === true && env.TERM !== 'dumb';
}

/** Removes ANSI escapes (for widths and tests). */
export function stripAnsi(text: string): string {
  return text.replace(/\u001b\[[0-9;]*m/g, '');
}
