/** Reading metrics.jsonl: one JSON object per line, a train step or an eval. */
import { open, readFile } from 'node:fs/promises';

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
    const value = parseObject(line);
    if (value) out.push(value);
  }
  return out;
}

/** A line's object, or undefined for a line torn by a crash and then appended to (the lines after it are still good). */
function parseObject(line: string): MetricsLine | undefined {
  if (line === '') return undefined;
  try {
    const value: unknown = JSON.parse(line);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as MetricsLine) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The last `count` lines of a metrics file (fewer when it has fewer; none when it does not exist),
 * read backwards a chunk at a time: a file of 100,000 steps costs what its last lines cost. Lines
 * are skipped as `readMetricsFile` skips them (a torn last line, a line that is not an object).
 */
export async function readMetricsTail(path: string, count: number, chunkBytes = 1 << 16): Promise<MetricsLine[]> {
  const handle = await open(path, 'r').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (!handle) return [];
  const newestFirst: MetricsLine[] = [];
  try {
    let position = (await handle.stat()).size;
    // Bytes read but not yet parsed; once the torn last line is cut off, they end with a newline.
    let carry = Buffer.alloc(0);
    let cut = false;
    while (newestFirst.length < count && position > 0) {
      const size = Math.min(chunkBytes, position);
      position -= size;
      const chunk = Buffer.alloc(size);
      await handle.read(chunk, 0, size, position);
      carry = Buffer.concat([chunk, carry]);
      if (!cut) {
        const last = carry.lastIndexOf(10);
        if (last === -1) continue;
        carry = carry.subarray(0, last + 1);
        cut = true;
      }
      // The first line may continue in the bytes before `position`: it waits for the next chunk.
      const start = position === 0 ? 0 : carry.indexOf(10) + 1;
      const lines = carry.toString('utf8', start).split('\n');
      for (let i = lines.length - 1; i >= 0 && newestFirst.length < count; i--) {
        const value = parseObject(lines[i]!);
        if (value) newestFirst.push(value);
      }
      carry = carry.subarray(0, start);
    }
  } finally {
    await handle.close();
  }
  return newestFirst.reverse();
}
