import { describe, expect, test } from 'vitest';
import type { Task } from '../datasets/types.js';
import { DataStream, STREAM_START } from './data-stream.js';
import { sampleStep, type SampledEpisode } from './dynamic-sampling.js';
import { tasksForStep } from './task-stream.js';

const tasks: Task[] = Array.from({ length: 10 }, (_, i) => ({ id: `t${i}`, prompt: `p${i}`, data: {} }));
const SEED = 3;
/** The split's first epoch in stream order, read independently of DataStream. */
const order = tasksForStep(tasks, SEED, 0, tasks.length).map((t) => t.id);

/** A group of `task` with these rewards (success = reward 1), and `failed` marking failed episodes. */
function group(task: Task, rewards: readonly number[], failed: readonly boolean[] = []): SampledEpisode[] {
  return rewards.map((reward, i) => ({ task, reward, success: reward === 1, failed: failed[i] ?? false }));
}

/**
 * A sampler whose groups have a reward spread exactly for the task ids in `spread` (the others all 0),
 * logging each round's task ids and first group index.
 */
function sampler(spread: readonly string[]) {
  const rounds: { ids: string[]; firstGroup: number }[] = [];
  const run = (drawn: readonly Task[], firstGroup: number): Promise<SampledEpisode[][]> => {
    rounds.push({ ids: drawn.map((t) => t.id), firstGroup });
    return Promise.resolve(drawn.map((t) => group(t, spread.includes(t.id) ? [1, 0, 1, 0] : [0, 0, 0, 0])));
  };
  return { rounds, run };
}

const ids = (groups: readonly SampledEpisode[][]): string[] => groups.map((g) => g[0]!.task.id);

describe('sampleStep', () => {
  test('returns the step after refill rounds that draw only the shortfall, with the cursor past every task drawn', async () => {
    const stream = new DataStream(tasks, SEED, STREAM_START);
    const { rounds, run } = sampler([order[1]!, order[3]!, order[4]!, order[6]!]);
    const step = await sampleStep({ batchSize: 3, maxRounds: 4, onFailure: 'zero', stream, run });

    // Round 1: three tasks, one with a spread; round 2: the two missing, both with one.
    expect(rounds).toStrictEqual([
      { ids: order.slice(0, 3), firstGroup: 0 },
      { ids: order.slice(3, 5), firstGroup: 3 },
    ]);
    expect([ids(step.groups), ids(step.kept)]).toStrictEqual([order.slice(0, 5), [order[1], order[3], order[4]]]);
    expect([step.rounds, step.ranOut, step.skippedSolved, step.skippedUnsolved]).toStrictEqual([2, false, 0, 0]);
    // Dropped groups' tasks count as read: the next step starts after them.
    expect(stream.state()).toStrictEqual({ position: 5, curriculum: {} });
    expect(stream.draw(1).tasks.map((t) => t.id)).toStrictEqual([order[5]]);
  });

  test('returns what it kept when the rounds run out, flagged, with every drawn task counted', async () => {
    const stream = new DataStream(tasks, SEED, STREAM_START);
    const { rounds, run } = sampler([order[1]!]);
    const step = await sampleStep({ batchSize: 3, maxRounds: 3, onFailure: 'zero', stream, run });
    expect(rounds.map((r) => r.ids)).toStrictEqual([order.slice(0, 3), order.slice(3, 5), order.slice(5, 7)]);
    expect([ids(step.kept), step.groups.length, step.rounds, step.ranOut]).toStrictEqual([[order[1]], 7, 3, true]);
    expect(stream.state().position).toBe(7);
  });

  test('returns one round with every group kept, spread or not, without dynamic sampling', async () => {
    const stream = new DataStream(tasks, SEED, STREAM_START);
    const { rounds, run } = sampler([]);
    const step = await sampleStep({ batchSize: 3, onFailure: 'zero', stream, run });
    expect(rounds.map((r) => r.ids)).toStrictEqual([order.slice(0, 3)]);
    expect([ids(step.kept), step.rounds, step.ranOut, stream.state().position]).toStrictEqual([
      order.slice(0, 3),
      1,
      false,
      3,
    ]);
  });

  test('returns a group kept or refilled as rollout.on_failure counts its failed episodes', async () => {
    // Reward 1 beside a failed episode's 0: a spread when failures score 0, none when they are left out.
    const run = (drawn: readonly Task[]): Promise<SampledEpisode[][]> =>
      Promise.resolve(drawn.map((t) => group(t, [1, 0], [false, true])));
    const zero = await sampleStep({
      batchSize: 1,
      maxRounds: 2,
      onFailure: 'zero',
      stream: new DataStream(tasks, SEED, STREAM_START),
      run,
    });
    const exclude = await sampleStep({
      batchSize: 1,
      maxRounds: 2,
      onFailure: 'exclude',
      stream: new DataStream(tasks, SEED, STREAM_START),
      run,
    });
    expect([zero.kept.length, zero.rounds]).toStrictEqual([1, 1]);
    expect([exclude.kept.length, exclude.rounds, exclude.ranOut]).toStrictEqual([0, 2, true]);
  });

  test('returns unsolved skips summed over its rounds, with each round recorded before the next draws', async () => {
    const stream = new DataStream(tasks, SEED, STREAM_START, { skip_unsolved: 1 });
    // order[1] was unsolved in its last group; round 1 samples order[0] and order[2] (order[2] unsolved, no spread).
    stream.record([group(tasks.find((t) => t.id === order[1])!, [0, 0])]);
    const { rounds, run } = sampler([order[0]!, order[3]!]);
    const step = await sampleStep({ batchSize: 2, maxRounds: 3, onFailure: 'zero', stream, run });
    expect(rounds.map((r) => r.ids)).toStrictEqual([[order[0], order[2]], [order[3]]]);
    expect([step.skippedSolved, step.skippedUnsolved, step.rounds, step.ranOut]).toStrictEqual([0, 1, 2, false]);
    // The step's own groups are in the curriculum: order[2] (all 0) is skipped by the next draw.
    expect(stream.state().curriculum).toStrictEqual({
      [order[0]!]: 'm',
      [order[1]!]: 'u',
      [order[2]!]: 'u',
      [order[3]!]: 'm',
    });
  });

  test('returns no groups and one round from a split with no tasks, with or without dynamic sampling', async () => {
    for (const maxRounds of [3, undefined]) {
      const { rounds, run } = sampler([]);
      const step = await sampleStep({
        batchSize: 2,
        maxRounds,
        onFailure: 'zero',
        stream: new DataStream([], SEED, STREAM_START),
        run,
      });
      expect([rounds, step.groups, step.rounds, step.ranOut]).toStrictEqual([[], [], 1, maxRounds !== undefined]);
    }
  });

  test('returns refill rounds that pass over the tasks the curriculum skips, counted per step', async () => {
    const stream = new DataStream(tasks, SEED, STREAM_START, { skip_solved: 1 });
    // order[0] and order[2] were solved in their last group, order[1] unsolved.
    stream.record([
      group(tasks.find((t) => t.id === order[0])!, [1, 1]),
      group(tasks.find((t) => t.id === order[2])!, [1, 1]),
    ]);
    const { rounds, run } = sampler([order[3]!]);
    const step = await sampleStep({ batchSize: 2, maxRounds: 2, onFailure: 'zero', stream, run });
    expect(rounds.map((r) => r.ids)).toStrictEqual([[order[1], order[3]], [order[4]]]);
    expect([step.skippedSolved, step.skippedUnsolved, step.rounds, step.ranOut]).toStrictEqual([2, 0, 2, true]);
    expect(stream.state().position).toBe(5);
  });
});
