import { readFile } from 'node:fs/promises';
import { TrainerError } from '../errors/index.js';

/**
 * The one line that says what went wrong in Python output: the exception line of the last
 * traceback (`ValueError: ...`, the first unindented line after `Traceback (most recent call last):`),
 * else the last non-empty line; empty when there is no output.
 */
export function lastExceptionLine(text: string): string {
  const lines = text.split(/\r?\n/);
  const start = lines.lastIndexOf('Traceback (most recent call last):');
  if (start >= 0) {
    const line = lines.slice(start + 1).find((l) => l.trim() !== '' && !/^\s/.test(l));
    if (line) return line.trim();
  }
  return (
    lines
      .map((l) => l.trim())
      .filter(Boolean)
      .pop() ?? ''
  );
}

/**
 * A TrainerError whose one-line message is `what: <python's exception line> (log: <path>)`, read
 * from the trainer's log file (missing or unreadable logs give just `what`).
 */
export async function trainerErrorFromLog(what: string, logFile: string, hint?: string): Promise<TrainerError> {
  const text = await readFile(logFile, 'utf8').catch(() => '');
  const line = lastExceptionLine(text.slice(-64 * 1024));
  const message = line ? `${what}: ${line} (log: ${logFile})` : `${what} (log: ${logFile})`;
  return new TrainerError(message, logFile, { hint: hint ?? `see ${logFile} for the full trainer output` });
}
