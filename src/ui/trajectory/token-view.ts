import type { ModelTokenizer, SegmentSource, TokenTrajectory, TrajectorySegment } from '../../tokens/index.js';
import type { Painter, Style } from '../ansi.js';
import { tokenPieces } from './token-pieces.js';

/** One token of a trajectory with everything the token view shows; also the `--json` form. */
export interface TokenRow {
  readonly index: number;
  readonly id: number;
  readonly text: string;
  readonly source: SegmentSource;
  readonly turn: number;
  /** Loss mask: 1 on the model's own (trained) tokens. */
  readonly mask: 0 | 1;
  /** Engine logprob of a model token; null for environment tokens. */
  readonly logprob: number | null;
}

/** Every token of a trajectory, decoded with the run's tokenizer. */
export function tokenRows(trajectory: TokenTrajectory, tokenizer: ModelTokenizer): TokenRow[] {
  const logprobs = trajectory.logprobsFull();
  const rows: TokenRow[] = [];
  for (const segment of trajectory.segments) {
    const ids = trajectory.ids.slice(segment.start, segment.start + segment.length);
    const pieces = tokenPieces(tokenizer, ids);
    ids.forEach((id, k) => {
      const index = segment.start + k;
      rows.push({
        index,
        id,
        text: pieces[k]!,
        source: segment.source,
        turn: segment.turn,
        mask: segment.source === 'model' ? 1 : 0,
        logprob: logprobs[index] ?? null,
      });
    });
  }
  return rows;
}

export interface TokenViewOptions {
  readonly paint: Painter;
  /** Inline coloured text (a TTY) or one token per line (plain output). */
  readonly inline: boolean;
  /** Model tokens with probability below this are highlighted. */
  readonly lowProbability: number;
  /** How many of the least likely tokens the summary lists. */
  readonly lowest?: number;
}

/**
 * The token view: segment boundaries as header lines, environment tokens dimmed, model tokens
 * coloured by probability (green >= 0.5, yellow above the threshold, red background below it), then
 * the least likely model tokens. Plain output lists each model token on a line of its own (index,
 * `!` when below the threshold, id, mask, logprob, text) and environment segments as text.
 */
export function tokenViewLines(
  trajectory: TokenTrajectory,
  rows: readonly TokenRow[],
  options: TokenViewOptions,
): string[] {
  const { paint } = options;
  const lowLog = Math.log(options.lowProbability);
  const lines: string[] = [
    paint(
      `${trajectory.length} tokens: ${rows.filter((r) => r.mask === 1).length} model (mask 1), ${rows.filter((r) => r.mask === 0).length} environment (mask 0)`,
      'bold',
    ),
  ];
  if (options.inline)
    lines.push(
      `legend: ${paint('environment', 'gray')}  ${paint('p>=0.5', 'green')}  ${paint(`p>=${options.lowProbability}`, 'yellow')}  ${paint(`p<${options.lowProbability}`, 'bgRed', 'bold')}`,
    );
  for (const segment of trajectory.segments) {
    const segmentRows = rows.slice(segment.start, segment.start + segment.length);
    lines.push(paint(segmentHeader(segment, segmentRows, lowLog, options.lowProbability), 'magenta', 'bold'));
    if (options.inline) lines.push(...inlineText(segmentRows, lowLog, paint).split('\n'));
    else if (segment.source === 'model') lines.push(...segmentRows.map((r) => tableLine(r, lowLog)));
    // Environment tokens carry no logprob: plain output shows their text, not a row per token.
    else
      lines.push(
        ...segmentRows
          .map((r) => r.text)
          .join('')
          .split('\n')
          .map((l) => `  | ${l}`),
      );
  }
  lines.push(...lowestTokens(rows, options.lowest ?? 10, paint));
  return lines;
}

function segmentHeader(
  segment: TrajectorySegment,
  rows: readonly TokenRow[],
  lowLog: number,
  lowProbability: number,
): string {
  const facts = [
    `${segment.source}`,
    `turn ${segment.turn}`,
    `tokens ${segment.start}..${segment.start + segment.length - 1}`,
  ];
  if (segment.source === 'model') {
    const lps = rows.map((r) => r.logprob ?? 0);
    const mean = lps.reduce((a, b) => a + b, 0) / Math.max(1, lps.length);
    facts.push(
      `policy v${segment.policyVersion ?? '?'}`,
      `finish ${segment.finishReason ?? '?'}`,
      `mean logprob ${mean.toFixed(3)}`,
      `${lps.filter((l) => l < lowLog).length} with p<${lowProbability}`,
    );
  }
  return `┌─ ${facts.join(' · ')}`;
}

function inlineText(rows: readonly TokenRow[], lowLog: number, paint: Painter): string {
  return rows
    .map((r, k) => {
      const text = r.text.replace(/\n/g, '⏎\n').replace(/\t/g, '→');
      const styles: Style[] =
        r.mask === 0
          ? ['gray']
          : r.logprob !== null && r.logprob < lowLog
            ? ['bgRed', 'bold']
            : [r.logprob !== null && r.logprob >= Math.log(0.5) ? 'green' : 'yellow'];
      // Every other model token underlined so that token boundaries stay visible.
      if (r.mask === 1 && k % 2 === 1) styles.push('underline');
      // Styles are closed before each newline so that a pager or a cut line never bleeds colour.
      return text
        .split('\n')
        .map((part) => paint(part, ...styles))
        .join('\n');
    })
    .join('');
}

function tableLine(r: TokenRow, lowLog: number): string {
  const lp = r.logprob === null ? '' : r.logprob.toFixed(4);
  const flag = r.logprob !== null && r.logprob < lowLog ? '!' : ' ';
  return `${String(r.index).padStart(6)} ${flag} ${String(r.id).padStart(7)}  ${r.mask}  ${lp.padStart(9)}  ${JSON.stringify(r.text)}`;
}

function lowestTokens(rows: readonly TokenRow[], count: number, paint: Painter): string[] {
  const model = rows
    .filter((r) => r.logprob !== null)
    .sort((a, b) => a.logprob! - b.logprob!)
    .slice(0, count);
  if (model.length === 0) return [];
  return [
    paint(`least likely model tokens:`, 'bold'),
    ...model.map(
      (r) =>
        `  #${r.index} ${JSON.stringify(r.text)} logprob ${r.logprob!.toFixed(3)} (p=${Math.exp(r.logprob!).toFixed(3)}, turn ${r.turn})`,
    ),
  ];
}
