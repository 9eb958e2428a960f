/**
 * The training tasks as a stream with a cursor: draws take the next positions of the seeded epoch order
 * (task-stream.ts), the curriculum's skipped tasks are passed over, and every position passed counts,
 * skipped or drawn, so the cursor says how much of the data a run has read. With dynamic sampling or a
 * curriculum a step's draws depend on the rewards of earlier ones, so steps draw in turn; otherwise each
 * step reads its fixed slice, as `tasksForStep` gives it, and collections ahead never wait on each other.
 */
import type { Task } from '../datasets/types.js';
import { InputError } from '../errors/index.js';
import { Curriculum, type CurriculumSettings, type CurriculumState, type ScoredEpisode } from './curriculum.js';
import { epochStream } from './task-stream.js';

/** Where the stream stands after a step: saved beside each checkpoint, read back on resume. */
export interface DataState {
  /** Positions of the epoch order read so far (tasks drawn plus tasks the curriculum skipped). */
  readonly position: number;
  readonly curriculum: CurriculumState;
}

/** A stream that has read nothing. */
export const STREAM_START: DataState = { position: 0, curriculum: {} };

/** What one draw took, and what the curriculum skipped to take it. */
export interface Drawn {
  readonly tasks: Task[];
  readonly skippedSolved: number;
  readonly skippedUnsolved: number;
}

/** The training split read from a cursor, with the curriculum deciding what is passed over. */
export class DataStream {
  private position: number;
  private readonly order: ReturnType<typeof epochStream>;
  private readonly curriculum: Curriculum | undefined;

  constructor(
    private readonly tasks: readonly Task[],
    seed: number,
    start: DataState,
    curriculum?: CurriculumSettings,
  ) {
    this.position = start.position;
    this.order = epochStream(tasks, seed);
    this.curriculum = curriculum ? new Curriculum(curriculum, start.curriculum) : undefined;
  }

  /**
   * The next `count` tasks the curriculum does not skip; the cursor moves past them and past the skipped ones.
   * @throws InputError when the curriculum skips every task of the split (nothing is left to draw).
   */
  draw(count: number): Drawn {
    const drawn: Drawn = { tasks: [], skippedSolved: 0, skippedUnsolved: 0 };
    if (this.tasks.length === 0) return drawn;
    let skippedInARow = 0;
    const skipped = { solved: 0, unsolved: 0 };
    while (drawn.tasks.length < count) {
      const task = this.order.slice(this.position, this.position + 1)[0]!;
      this.position++;
      const reason = this.curriculum?.skips(task);
      if (reason === undefined) {
        drawn.tasks.push(task);
        skippedInARow = 0;
        continue;
      }
      skipped[reason]++;
      // An epoch's worth of skips in a row: look whether any task is left at all before reading on.
      if (++skippedInARow >= this.tasks.length) {
        if (this.tasks.every((t) => this.curriculum?.skips(t) !== undefined)) throw this.exhausted();
        skippedInARow = 0;
      }
    }
    return { ...drawn, skippedSolved: skipped.solved, skippedUnsolved: skipped.unsolved };
  }

  /** Records sampled groups (each one task's episodes) in the curriculum, so later draws see their outcomes. */
  record(groups: readonly (readonly ScoredEpisode[])[]): void {
    for (const group of groups) this.curriculum?.record(group);
  }

  state(): DataState {
    return { position: this.position, curriculum: this.curriculum?.state() ?? {} };
  }

  private exhausted(): InputError {
    return new InputError(
      `dataset.curriculum skips every one of the ${this.tasks.length} training tasks: each was solved or unsolved in all of its last groups`,
      { hint: 'raise skip_solved/skip_unsolved, use a larger dataset, or train fewer steps' },
    );
  }
}

/** Hands each step the data stream in turn. */
export interface StepTurns {
  /**
   * Runs `body` with the stream once `step`'s turn comes (steps are called in order; with `sequential`
   * each waits for the step before it to finish with the stream) and returns its result and where the
   * stream stood after it.
   */
  turn<T>(step: number, body: (stream: DataStream) => Promise<T>): Promise<{ result: T; state: DataState }>;
}

export interface StepTurnOptions {
  readonly tasks: readonly Task[];
  readonly seed: number;
  readonly tasksPerStep: number;
  /** Steps already done; the stream stands at `start` after them. */
  readonly startStep: number;
  readonly start: DataState;
  readonly curriculum?: CurriculumSettings | undefined;
  /** Whether a step may draw more than its `tasksPerStep` tasks (dynamic sampling's refill). */
  readonly refills: boolean;
}

/** The turns of a run's steps at its data stream. */
export function stepTurns(options: StepTurnOptions): StepTurns {
  const { tasks, seed, tasksPerStep, startStep, start, curriculum } = options;
  if (!options.refills && curriculum === undefined)
    // Every step reads exactly its own slice: where it starts is known without waiting for the steps before it.
    return {
      async turn(step, body) {
        const stream = new DataStream(tasks, seed, {
          position: start.position + (step - startStep - 1) * tasksPerStep,
          curriculum: {},
        });
        const result = await body(stream);
        return { result, state: stream.state() };
      },
    };
  const stream = new DataStream(tasks, seed, start, curriculum);
  let previous: Promise<unknown> = Promise.resolve();
  let next = startStep + 1;
  return {
    turn(step, body) {
      if (step !== next) throw new Error(`step ${step} asked for the data stream before step ${next}`);
      next++;
      const turn = previous.then(async () => {
        const result = await body(stream);
        return { result, state: stream.state() };
      });
      // The next step waits for this one to finish with the stream, whether it succeeded or not.
      previous = turn.catch(() => undefined);
      return turn;
    },
  };
}
