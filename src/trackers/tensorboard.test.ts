import { appendFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { readEventDir } from '../__fixtures__/tfevents-reader.js';
import { scalarsOf } from './scalars.js';
import { TensorBoardWriter } from './tensorboard.js';
import { crc32c } from './tfrecord.js';

const trainLine = {
  kind: 'train',
  step: 3,
  at: '2026-01-02T03:04:05.000Z',
  policy_version: 3,
  'reward/mean': 0.625,
  accuracy: 0.5,
  'train/loss': -0.125,
  'tool_calls/calculator': 1.5,
  'tool_errors/calculator': 0,
  time_step_s: 2.25,
  note: 'text',
};
const evalLine = {
  kind: 'eval',
  step: 3,
  at: '2026-01-02T03:04:06.000Z',
  split: 'test',
  accuracy: 0.75,
  reward_mean: 0.8,
  tasks: 64,
};

describe('crc32c', () => {
  test('returns the CRC-32C check value of "123456789"', () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
  });
});

describe('scalarsOf', () => {
  test('returns the numeric figures of a train line under their names and of an eval line under eval/', () => {
    expect(scalarsOf(trainLine)).toStrictEqual({
      step: 3,
      wallTime: Date.parse('2026-01-02T03:04:05.000Z') / 1000,
      values: [
        ['reward/mean', 0.625],
        ['accuracy', 0.5],
        ['train/loss', -0.125],
        ['tool_calls/calculator', 1.5],
        ['tool_errors/calculator', 0],
        ['time_step_s', 2.25],
      ],
    });
    expect(scalarsOf(evalLine)!.values).toStrictEqual([
      ['eval/accuracy', 0.75],
      ['eval/reward_mean', 0.8],
      ['eval/tasks', 64],
    ]);
    expect(scalarsOf({ kind: 'eval', step: 0, label: 'base', accuracy: 0.25 })!.values).toStrictEqual([
      ['eval/base/accuracy', 0.25],
    ]);
    expect(scalarsOf({ kind: 'note' })).toBeUndefined();
  });
});

describe('TensorBoardWriter', () => {
  test('returns event files an independent reader decodes: the file version first, then one scalar event per metric per step', () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'atk-tb-')), 'tb');
    const writer = new TensorBoardWriter(dir, 1_700_000_000.5);
    writer.write(scalarsOf(trainLine)!);
    writer.write(scalarsOf(evalLine)!);
    writer.write(scalarsOf({ kind: 'train', step: 4_000_000_000, 'reward/mean': 1 / 3 })!);
    writer.close();
    const events = readEventDir(dir);
    expect(events[0]).toStrictEqual({ wallTime: 1_700_000_000.5, step: 0, fileVersion: 'brain.Event:2', values: [] });
    const scalars = events.slice(1).map((e) => [e.step, e.values.map((v) => [v.tag, v.simpleValue])]);
    expect(scalars).toStrictEqual([
      ...scalarsOf(trainLine)!.values.map(([tag, value]) => [3, [[tag, Math.fround(value)]]]),
      ...scalarsOf(evalLine)!.values.map(([tag, value]) => [3, [[tag, Math.fround(value)]]]),
      [4_000_000_000, [['reward/mean', Math.fround(1 / 3)]]],
    ]);
    expect(events[1]!.wallTime).toBe(Date.parse('2026-01-02T03:04:05.000Z') / 1000);
  });

  test('rejects, in the reader, a file whose record was altered (the checksums are real)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'atk-tb-'));
    const writer = new TensorBoardWriter(dir);
    writer.write(scalarsOf(trainLine)!);
    writer.close();
    appendFileSync(writer.path, Buffer.from([1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 42, 0, 0, 0, 0]));
    expect(() => readEventDir(dir)).toThrow(/bad length crc/);
  });
});
