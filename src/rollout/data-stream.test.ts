import { describe, expect, test } from 'vitest';
import type { Task } from '../datasets/types.js';
import { InputError } from '../errors/index.js';
import { groupOutcome, type ScoredEpisode } from './curriculum.js';
import { DataStream, STREAM_START, stepTurns } from './data-stream.js';
import { tasksForStep } from './task-stream.js';

const tasks: Task[] = Array.from({ length: 6 }, (_, i) => ({ id: `t${i}`, prompt: `p${i}`, data: {} }));
const SEED = 5;
const byId = (id: string): Task => tasks.find((t) => t.id === id)!;
/** The first two epochs in stream order, read independently of DataStream. */
const order = tasksForStep(tasks, SEED, 0, 2 * tasks.length).map((t) => t.id);

/** A group of `id` whose episodes succeed as `successes` says. */
function group(id: string, successes: readonly boolean[], failed = false): ScoredEpisode[] {
  return successes.map((success) => ({ task: byId(id), success, failed }));
}
const solved = (id: string) => group(id, [true, true]);
const unsolved = (id: string) => group(id, [false, false]);
const mixed = (id: string) => group(id, [true, false]);
const drawIds = (stream: DataStream, count: number) => stream.draw(count).tasks.map((t) => t.id);

describe('groupOutcome', () => {
  test('returns s, u or m over the episodes that did not fail, and nothing when all failed', () => {
    expect(
      [solved('t0'), unsolved('t0'), mixed('t0'), group('t0', [true, true], true)].map(groupOutcome),
    ).toStrictEqual(['s', 'u', 'm', undefined]);
    const failedBeside = [...solved('t0'), { task: byId('t0'), success: false, failed: true }];
    expect(groupOutcome(failedBeside)).toBe('s');
  });
});

describe('DataStream with a curriculum', () => {
  test('returns draws that pass over a task only once its last K groups were all solved, counting the skipped positions', () => {
    const stream = new DataStream(tasks, SEED, STREAM_START, { skip_solved: 2 });
    const [a, b] = [order[0]!, order[1]!];
    // a: solved twice in a row; b: solved, then mixed, then solved (its last two are not both solved).
    stream.record([solved(a), solved(b), mixed(b), solved(a), solved(b)]);
    expect(stream.state().curriculum).toStrictEqual({ [a]: 'ss', [b]: 'ms' });
    const first = stream.draw(6);
    expect(first.tasks.map((t) => t.id)).toStrictEqual(order.slice(1, 7));
    expect([first.skippedSolved, first.skippedUnsolved, stream.state().position]).toStrictEqual([1, 0, 7]);
    // The rest of the next epoch passes over a again, wherever it falls.
    const rest = order.slice(7).filter((id) => id !== a);
    const next = stream.draw(rest.length);
    expect([next.tasks.map((t) => t.id), next.skippedSolved, stream.state().position]).toStrictEqual([rest, 1, 12]);
  });

  test('returns unsolved skips with skip_unsolved, and keeps a task whose groups all failed in the harness', () => {
    const stream = new DataStream(tasks, SEED, STREAM_START, { skip_unsolved: 1 });
    const [a, b] = [order[0]!, order[1]!];
    stream.record([unsolved(a), group(b, [false, false], true), []]);
    expect(stream.state().curriculum).toStrictEqual({ [a]: 'u' });
    const drawn = stream.draw(2);
    expect([drawn.tasks.map((t) => t.id), drawn.skippedSolved, drawn.skippedUnsolved]).toStrictEqual([
      [b, order[2]],
      0,
      1,
    ]);
  });

  test('returns the same draws from a state read back as JSON as from the stream that saved it', () => {
    const stream = new DataStream(tasks, SEED, STREAM_START, { skip_solved: 1, skip_unsolved: 2 });
    drawIds(stream, 3);
    stream.record([solved(order[0]!), unsolved(order[1]!), unsolved(order[1]!), mixed(order[2]!)]);
    const saved = JSON.parse(JSON.stringify(stream.state()));
    expect(saved).toStrictEqual({ position: 3, curriculum: { [order[0]!]: 's', [order[1]!]: 'uu', [order[2]!]: 'm' } });
    const resumed = new DataStream(tasks, SEED, saved, { skip_solved: 1, skip_unsolved: 2 });
    expect(drawIds(resumed, 8)).toStrictEqual(drawIds(stream, 8));
    expect(resumed.state()).toStrictEqual(stream.state());
  });

  test('returns a task drawn until K groups exist, and each rule read over its own last K outcomes', () => {
    const [a, b] = [order[0]!, order[1]!];
    // skip_solved 2 and nothing about unsolved: a once solved and b once unsolved are both drawn.
    const once = new DataStream(tasks, SEED, STREAM_START, { skip_solved: 2 });
    once.record([solved(a), unsolved(b)]);
    expect(drawIds(once, 2)).toStrictEqual([a, b]);
    // skip_solved 1 beside skip_unsolved 2: a's last group solved (after an unsolved one) is enough.
    const mixedRules = new DataStream(tasks, SEED, STREAM_START, { skip_solved: 1, skip_unsolved: 2 });
    mixedRules.record([unsolved(a), solved(a)]);
    const drawn = mixedRules.draw(1);
    expect([drawn.tasks.map((t) => t.id), drawn.skippedSolved]).toStrictEqual([[b], 1]);
  });

  test('returns the task left when an epoch of skips in a row spans two epochs that repeat a task', () => {
    // Three tasks; a seed whose second epoch opens with the first epoch's last task, so skipping the other
    // two reads three skips in a row (x, y, y) while the third task is still drawn.
    const three = tasks.slice(0, 3);
    const seed = [...Array(50).keys()].find((s) => {
      const ids = tasksForStep(three, s, 0, 6).map((t) => t.id);
      return ids[2] === ids[3];
    });
    expect(seed).toBeDefined();
    const ids = tasksForStep(three, seed!, 0, 6).map((t) => t.id);
    const stream = new DataStream(
      three,
      seed!,
      { position: 1, curriculum: { [ids[1]!]: 's', [ids[2]!]: 's' } },
      {
        skip_solved: 1,
      },
    );
    const drawn = stream.draw(1);
    expect([drawn.tasks.map((t) => t.id), drawn.skippedSolved]).toStrictEqual([[ids[0]], 3]);
  });

  test('returns nothing from a split with no tasks', () => {
    expect(new DataStream([], SEED, STREAM_START).draw(2)).toStrictEqual({
      tasks: [],
      skippedSolved: 0,
      skippedUnsolved: 0,
    });
  });

  test('rejects a draw once every task of the split is skipped', () => {
    const stream = new DataStream(tasks, SEED, STREAM_START, { skip_solved: 1 });
    stream.record(tasks.map((t) => solved(t.id)));
    expect(() => stream.draw(1)).toThrow(InputError);
    expect(() => stream.draw(1)).toThrow(/dataset\.curriculum skips every one of the 6 training tasks/);
    expect(() => stream.draw(1)).toThrow(
      expect.objectContaining({ hint: 'raise skip_solved/skip_unsolved, use a larger dataset, or train fewer steps' }),
    );
  });
});

describe('stepTurns', () => {
  test('returns each step its own slice, whatever order the turns finish in, without a curriculum or refills', async () => {
    const turns = stepTurns({
      tasks,
      seed: SEED,
      tasksPerStep: 2,
      startStep: 1,
      start: { position: 2, curriculum: {} },
      refills: false,
    });
    const late = turns.turn(2, async (stream) => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      return drawIds(stream, 2);
    });
    const early = turns.turn(3, async (stream) => drawIds(stream, 2));
    expect(await early).toStrictEqual({
      result: tasksForStep(tasks, SEED, 2, 2).map((t) => t.id),
      state: { position: 6, curriculum: {} },
    });
    expect(await late).toStrictEqual({
      result: tasksForStep(tasks, SEED, 1, 2).map((t) => t.id),
      state: { position: 4, curriculum: {} },
    });
  });

  test('returns steps in turn with refills: a step draws after the step before it is done, from where it left the cursor', async () => {
    const turns = stepTurns({ tasks, seed: SEED, tasksPerStep: 2, startStep: 0, start: STREAM_START, refills: true });
    const log: string[] = [];
    let release = (): void => undefined;
    const first = turns.turn(1, async (stream) => {
      log.push('1 starts');
      const drawn = drawIds(stream, 3); // a refill: one more than the step's share
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      log.push('1 ends');
      return drawn;
    });
    const second = turns.turn(2, async (stream) => {
      log.push('2 starts');
      return drawIds(stream, 2);
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(log).toStrictEqual(['1 starts']);
    release();
    expect((await first).state.position).toBe(3);
    expect(await second).toStrictEqual({ result: order.slice(3, 5), state: { position: 5, curriculum: {} } });
    expect(log).toStrictEqual(['1 starts', '1 ends', '2 starts']);
    expect(() => turns.turn(4, async () => 0)).toThrow(/step 4 asked for the data stream before step 3/);
  });

  test('returns a later step its slice while the step before it is still drawing, without a curriculum or refills', async () => {
    const turns = stepTurns({ tasks, seed: SEED, tasksPerStep: 1, startStep: 0, start: STREAM_START, refills: false });
    let release = (): void => undefined;
    const first = turns.turn(1, async (stream) => {
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      return drawIds(stream, 1);
    });
    // Step 2 finishes before step 1 is released: it never waited for it.
    expect((await turns.turn(2, async (stream) => drawIds(stream, 1))).result).toStrictEqual([order[1]]);
    release();
    expect((await first).result).toStrictEqual([order[0]]);
  });

  test('returns draws that pass over what the saved curriculum skips, with a curriculum and no refills', async () => {
    const start = { position: 0, curriculum: { [order[0]!]: 's' } };
    const turns = stepTurns({
      tasks,
      seed: SEED,
      tasksPerStep: 1,
      startStep: 0,
      start,
      curriculum: { skip_solved: 1 },
      refills: false,
    });
    expect(await turns.turn(1, async (stream) => stream.draw(1).tasks.map((t) => t.id))).toStrictEqual({
      result: [order[1]],
      state: { position: 2, curriculum: { [order[0]!]: 's' } },
    });
  });

  test('returns the next step its turn when the step before it failed', async () => {
    const turns = stepTurns({ tasks, seed: SEED, tasksPerStep: 1, startStep: 0, start: STREAM_START, refills: true });
    const failed = turns.turn(1, async (stream) => {
      stream.draw(1);
      throw new Error('cancelled');
    });
    await expect(failed).rejects.toThrow('cancelled');
    expect((await turns.turn(2, async (stream) => drawIds(stream, 1))).result).toStrictEqual([order[1]]);
  });
});
