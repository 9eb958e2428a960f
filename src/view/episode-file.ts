/**
 * One trajectory or eval results file, indexed for the viewer: a summary and the byte range of each
 * line, so that a page of the episodes table needs no re-read and one episode is one small read.
 * Step files are written whole and atomically, and results files once, so (size, mtime) says whether
 * an index is still current.
 */
import { open, readFile, stat } from 'node:fs/promises';
import { conversationTurns } from '../ui/trajectory/conversation.js';
import { parseTrajectoryLine, type TrajectoryRecord } from '../ui/trajectory/record.js';
import type { EpisodeSummary } from './api-types.js';
import { summarizeEpisode } from './episode-query.js';

/** The summaries of a file's episodes and where each line is. */
export interface EpisodeFileIndex {
  readonly file: string;
  readonly size: number;
  readonly mtimeMs: number;
  readonly episodes: readonly EpisodeSummary[];
  /** Byte offset and length of each episode's line. */
  readonly lines: readonly { readonly start: number; readonly length: number }[];
}

/**
 * Reads and indexes a file. A line that is not a trajectory record is skipped (a viewer shows what is
 * readable; `atk inspect-trajectory` names the bad line).
 */
export async function indexEpisodeFile(file: string): Promise<EpisodeFileIndex> {
  const info = await stat(file);
  const buffer = await readFile(file);
  const episodes: EpisodeSummary[] = [];
  const lines: { start: number; length: number }[] = [];
  let start = 0;
  while (start < buffer.length) {
    let end = buffer.indexOf(10, start);
    // A file is complete (atomic write), so a missing final newline still ends a record.
    if (end === -1) end = buffer.length;
    if (end > start) {
      const record = tryParse(buffer.toString('utf8', start, end), file);
      if (record) {
        episodes.push(summarizeEpisode(record, episodes.length));
        lines.push({ start, length: end - start });
      }
    }
    start = end + 1;
  }
  return { file, size: info.size, mtimeMs: info.mtimeMs, episodes, lines };
}

/**
 * The summaries of one task's episodes in a file, without indexing it: the file is searched for the task
 * id as the run loop writes it (`"task_id":"..."`) and only the lines that hold it are parsed, so
 * following a task across 1,000 step files reads them but parses about one line in each. Episodes are
 * numbered by the file's non-empty lines, as the index numbers them in a file with no unreadable line
 * (every file atk writes: whole, atomically).
 */
export async function taskEpisodes(file: string, taskId: string): Promise<EpisodeSummary[]> {
  const buffer = await readFile(file);
  const needle = Buffer.from(`"task_id":${JSON.stringify(taskId)}`);
  const found: EpisodeSummary[] = [];
  let episode = -1; // index of the line that starts at `lineStart`, once counted
  let lineStart = 0;
  let lineEnd = -1;
  for (let hit = buffer.indexOf(needle); hit !== -1; hit = buffer.indexOf(needle, lineEnd + 1)) {
    // Count the non-empty lines up to the one holding the hit.
    while (lineEnd < hit) {
      lineStart = lineEnd + 1;
      lineEnd = buffer.indexOf(10, lineStart);
      if (lineEnd === -1) lineEnd = buffer.length;
      if (lineEnd > lineStart) episode++;
    }
    // A tool's input may hold a "task_id" key too: the record's own must match.
    const record = tryParse(buffer.toString('utf8', lineStart, lineEnd), file);
    if (record?.task_id === taskId) found.push(summarizeEpisode(record, episode));
    if (lineEnd >= buffer.length) break;
  }
  return found;
}

/** Whether the file still has the size and mtime its index was built from. */
export async function isCurrent(index: EpisodeFileIndex): Promise<boolean> {
  const info = await stat(index.file).catch(() => undefined);
  return info !== undefined && info.size === index.size && info.mtimeMs === index.mtimeMs;
}

/** One episode's full record, read from its byte range. */
export async function readEpisode(index: EpisodeFileIndex, episode: number): Promise<TrajectoryRecord | undefined> {
  const line = index.lines[episode];
  if (!line) return undefined;
  const handle = await open(index.file, 'r');
  try {
    const buffer = Buffer.alloc(line.length);
    await handle.read(buffer, 0, line.length, line.start);
    return parseTrajectoryLine(buffer.toString('utf8'), `${index.file}:${episode + 1}`);
  } finally {
    await handle.close();
  }
}

/**
 * The indices of the episodes whose conversation contains `text` (case-insensitive): messages' text,
 * tool calls and results, the task id and the error, but not the token arrays.
 */
export async function episodesContaining(index: EpisodeFileIndex, text: string): Promise<Set<number>> {
  const needle = text.toLowerCase();
  const buffer = await readFile(index.file);
  const hits = new Set<number>();
  index.lines.forEach((line, i) => {
    const record = tryParse(buffer.toString('utf8', line.start, line.start + line.length), index.file);
    if (record && searchText(record).includes(needle)) hits.add(i);
  });
  return hits;
}

function searchText(record: TrajectoryRecord): string {
  const parts: string[] = [record.task_id, record.error ?? ''];
  for (const turn of conversationTurns(record.messages)) {
    for (const part of turn.parts) {
      if (part.kind === 'text' || part.kind === 'reasoning') parts.push(part.text);
      else if (part.kind === 'toolCall') parts.push(part.name, JSON.stringify(part.input));
      else parts.push(part.name, part.text);
    }
  }
  return parts.join('\n').toLowerCase();
}

/**
 * The record of a line without its token trajectory, which summaries and search never read. The run
 * loop writes `trajectory` as the last key and it is most of the line, so the line is cut before it;
 * a line written otherwise is parsed whole.
 */
function tryParse(text: string, file: string): TrajectoryRecord | undefined {
  const cut = text.lastIndexOf(',"trajectory":');
  if (cut !== -1) {
    try {
      // The schema requires the key (its value is left unparsed): null stands in for the tokens cut off.
      return parseTrajectoryLine(`${text.slice(0, cut)},"trajectory":null}`, file);
    } catch {
      // Not the last key after all: fall through to the whole line.
    }
  }
  try {
    return parseTrajectoryLine(text, file);
  } catch {
    return undefined;
  }
}
