/**
 * A run's record of which steps' episodes were started (`logs/collect.jsonl`, one `{"step", "episodes"}`
 * line per step, appended when its collection starts), so a resume can count the episodes the killed run
 * had collected or had in flight for steps after its checkpoint: those are discarded, never trained, and
 * the count says how much work the kill cost. With rollouts collected ahead that is up to
 * `max_staleness + 1` steps' worth.
 */
import { appendFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../runs/index.js';

/** The journal of the run in `runDir`. */
export function collectJournal(runDir: string): {
  started(step: number, episodes: number): Promise<void>;
  discardAfter(stepsDone: number): Promise<number>;
} {
  const path = join(runDir, 'logs', 'collect.jsonl');
  return {
    started: (step, episodes) => appendFile(path, `${JSON.stringify({ step, episodes })}\n`),
    /** Drops the lines of steps after `stepsDone` (a resume starts them again) and returns their episodes. */
    async discardAfter(stepsDone) {
      const text = await readFile(path, 'utf8').catch(() => '');
      // A line torn by the kill is the last one, of a step after the checkpoint: it counts nothing.
      const lines = text.split('\n').flatMap((line) => {
        try {
          return [JSON.parse(line) as { step: number; episodes: number }];
        } catch {
          return [];
        }
      });
      const later = lines.filter((l) => l.step > stepsDone);
      const torn = text.length > 0 && !text.endsWith('\n');
      if (later.length > 0 || torn)
        await writeFileAtomic(
          path,
          lines
            .filter((l) => l.step <= stepsDone)
            .map((l) => `${JSON.stringify(l)}\n`)
            .join(''),
        );
      return later.reduce((sum, l) => sum + l.episodes, 0);
    },
  };
}
