/**
 * Tables for `atk runs ls` and `atk doctor`: boxed with a coloured header on a terminal, plain
 * aligned columns otherwise (pipes, files, CI logs, tests), so output stays greppable.
 */
import Table from 'cli-table3';

/** How to render: `tty` picks boxes and colour; default: whether stdout is a terminal. */
export interface TableStyle {
  readonly tty?: boolean;
}

const PLAIN_CHARS = {
  top: '',
  'top-mid': '',
  'top-left': '',
  'top-right': '',
  bottom: '',
  'bottom-mid': '',
  'bottom-left': '',
  'bottom-right': '',
  left: '',
  'left-mid': '',
  mid: '',
  'mid-mid': '',
  right: '',
  'right-mid': '',
  middle: '  ',
};

/** Render rows under a header. Cells may hold several lines. */
export function renderTable(
  head: readonly string[],
  rows: readonly (readonly string[])[],
  style: TableStyle = {},
): string {
  const tty = style.tty ?? Boolean(process.stdout.isTTY);
  const table = tty
    ? new Table({ head: head.map((h) => paint(h, 'bold', true)), style: { head: [], border: ['grey'] } })
    : new Table({
        head: [...head],
        chars: PLAIN_CHARS,
        style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0 },
      });
  table.push(...rows.map((r) => [...r]));
  return table
    .toString()
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n');
}

const CODES = { bold: [1, 22], red: [31, 39], green: [32, 39], yellow: [33, 39], grey: [90, 39] } as const;

/** Wrap text in an ANSI colour when `tty`; unchanged otherwise. */
export function paint(text: string, color: keyof typeof CODES, tty: boolean = Boolean(process.stdout.isTTY)): string {
  const [on, off] = CODES[color];
  return tty ? `\u001b[${on}m${text}\u001b[${off}m` : text;
}
