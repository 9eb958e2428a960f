import { InputError } from '../../errors/index.js';
import type { TrajectoryRecord } from './record.js';

/** Which episode of a file to show. */
export type EpisodeSelector =
  | { readonly kind: 'index'; readonly index: number }
  | { readonly kind: 'best' }
  | { readonly kind: 'worst' }
  | { readonly kind: 'failed' };

/** The chosen episode, its index in the file, and how many others matched (for `--failed`). */
export interface Selection {
  readonly index: number;
  readonly record: TrajectoryRecord;
  /** Indices of every episode the selector matched, in file order. */
  readonly matches: readonly number[];
}

/**
 * Picks one episode: `index` by position in the file; `best`/`worst` by reward (the first on ties);
 * `failed` the first episode that did not succeed (harness failures included).
 * @throws InputError when the index is out of range or no episode failed.
 */
export function selectEpisode(
  records: readonly TrajectoryRecord[],
  selector: EpisodeSelector,
  file: string,
): Selection {
  if (records.length === 0) throw new InputError(`${file}: no episodes`);
  switch (selector.kind) {
    case 'index': {
      const record = records[selector.index];
      if (!Number.isInteger(selector.index) || !record) {
        throw new InputError(`--episode ${selector.index}: ${file} has episodes 0..${records.length - 1}`);
      }
      return { index: selector.index, record, matches: [selector.index] };
    }
    case 'best':
    case 'worst': {
      const sign = selector.kind === 'best' ? 1 : -1;
      let index = 0;
      records.forEach((r, i) => {
        if (sign * (r.reward - records[index]!.reward) > 0) index = i;
      });
      return { index, record: records[index]!, matches: [index] };
    }
    case 'failed': {
      const matches = records.flatMap((r, i) => (r.failed || !r.success ? [i] : []));
      if (matches.length === 0) throw new InputError(`${file}: no failed episodes (all ${records.length} succeeded)`);
      return { index: matches[0]!, record: records[matches[0]!]!, matches };
    }
  }
}
