import type { DriftReport } from '../../tokens/index.js';
import type { Painter } from '../ansi.js';

/** The drift audit as terminal lines: a verdict, then each hunk's trajectory text against the re-render. */
export function driftLines(report: DriftReport, paint: Painter): string[] {
  if (report.identical) {
    return [
      paint(
        `drift: none: re-rendering the conversation gives the same ${report.trajectoryTokens} tokens`,
        'green',
        'bold',
      ),
    ];
  }
  const lines = [
    paint(
      `drift: ${report.hunkCount} place(s) where a re-render differs; ${report.changedModelTokens} model token(s) a text pipeline would train on wrongly`,
      'yellow',
      'bold',
    ),
    `  trajectory ${report.trajectoryTokens} tokens, re-rendered ${report.rerenderedTokens}, first divergence at token ${report.firstDivergence}`,
  ];
  for (const [i, hunk] of report.hunks.entries()) {
    lines.push(
      paint(
        `  hunk ${i + 1}: tokens ${hunk.trajectory.start}..${hunk.trajectory.end} (${hunk.modelTokens} model) vs re-rendered ${hunk.rerendered.start}..${hunk.rerendered.end}`,
        'bold',
      ),
      `    trajectory  ${paint(JSON.stringify(hunk.trajectory.text), 'red')}`,
      `    re-render   ${paint(JSON.stringify(hunk.rerendered.text), 'green')}`,
    );
  }
  if (report.hunkCount > report.hunks.length) lines.push(`  ... ${report.hunkCount - report.hunks.length} more`);
  return lines;
}
