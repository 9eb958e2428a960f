/** Reading metrics.jsonl: one JSON object per line, a train step or an eval. */
import { readFile } from 'node:fs/promises';

/** One metrics line; `kind` is `train` or `eval`, `step` counts steps. */
export interface MetricsLine {
  readonly kind?: string;
  readonly step?: number;
  readonly [figure: string]: unknown;
}

/**
 * Every complete line of a metrics file; none when it does not exist. A last line without its
 * newline is what a killed writer leaves: it is skipped, as is any line that is not an object.
 */
export async function readMetricsFile(path: string): Promise<MetricsLine[]> {
  const text = await readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return '';
    throw error;
  });
  const lines = text.split('\n');
  lines.pop(); // '' after the final newline, or a torn line
  const out: MetricsLine[] = [];
  for (const line of lines) {
    try {
      const value: unknown = JSON.parse(line);
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) out.push(value as MetricsLine);
    } catch {
      // A line torn by a crash and then appended to; the lines after it are still good.
    }
  }
  return out;
}
