/**
 * The curriculum of `dataset.curriculum`: each task's outcomes over its last groups, and which tasks
 * the data stream skips because of them (solved in each of its last `skip_solved` groups, or unsolved in
 * each of its last `skip_unsolved`). Its state is plain data, saved beside each checkpoint, so a resumed
 * run skips exactly what the interrupted one would have.
 */
import type { Task } from '../datasets/types.js';

/** `dataset.curriculum` as the recipe gives it. */
export interface CurriculumSettings {
  readonly skip_solved?: number | undefined;
  readonly skip_unsolved?: number | undefined;
}

/**
 * One group's outcome for its task: `s` every scored episode succeeded (reward at or above
 * `reward.success_threshold`), `u` none did, `m` some did.
 */
export type GroupOutcome = 's' | 'u' | 'm';

/** Per task id, its newest outcomes, oldest first (`"ssm"`): the curriculum's saved state. */
export type CurriculumState = Readonly<Record<string, string>>;

/** What a curriculum needs of an episode. */
export type ScoredEpisode = { readonly task: Task; readonly success: boolean; readonly failed: boolean };

/** Why a task is skipped now, if it is. */
export type SkipReason = 'solved' | 'unsolved';

/** A curriculum's live state: outcomes in, skip decisions out. */
export class Curriculum {
  private readonly outcomes: Map<string, string>;
  /** Outcomes kept per task: as many as the longer of the two rules reads. */
  private readonly depth: number;

  constructor(
    private readonly settings: CurriculumSettings,
    state: CurriculumState = {},
  ) {
    this.depth = Math.max(settings.skip_solved ?? 0, settings.skip_unsolved ?? 0);
    this.outcomes = new Map(Object.entries(state));
  }

  /** Records one sampled group of a task. A group whose every episode failed (the harness, not the model) says nothing and is not recorded. */
  record(group: readonly ScoredEpisode[]): void {
    const outcome = groupOutcome(group);
    const task = group[0]?.task;
    if (outcome === undefined || task === undefined) return;
    const history = (this.outcomes.get(task.id) ?? '') + outcome;
    this.outcomes.set(task.id, history.slice(-this.depth));
  }

  /** Whether the stream skips `task` now, and why; solved is checked first. */
  skips(task: Task): SkipReason | undefined {
    const history = this.outcomes.get(task.id);
    if (history === undefined) return undefined;
    if (lastAll(history, this.settings.skip_solved, 's')) return 'solved';
    if (lastAll(history, this.settings.skip_unsolved, 'u')) return 'unsolved';
    return undefined;
  }

  /** The state to save (a copy: the live one goes on changing). */
  state(): CurriculumState {
    return Object.fromEntries(this.outcomes);
  }
}

/** A group's outcome over its episodes that did not fail; undefined when every one failed. */
export function groupOutcome(group: readonly ScoredEpisode[]): GroupOutcome | undefined {
  const scored = group.filter((e) => !e.failed);
  if (scored.length === 0) return undefined;
  const solved = scored.filter((e) => e.success).length;
  return solved === scored.length ? 's' : solved === 0 ? 'u' : 'm';
}

/** The last `k` outcomes of `history` exist and are all `outcome`. */
function lastAll(history: string, k: number | undefined, outcome: GroupOutcome): boolean {
  return k !== undefined && history.length >= k && [...history.slice(-k)].every((o) => o === outcome);
}
