import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { readEventDir } from '../__fixtures__/tfevents-reader.js';
import { projectRoot } from '../util/paths.js';
import { TrackerSet } from './index.js';
import { startWandbTracker } from './wandb.js';

// The real logger process (trainer/atk_trainer/wandb_logger.py under python3) with a recording
// stand-in of the wandb client on PYTHONPATH: the wiring is tested up to the client call.
const standin = join(projectRoot(), 'src', '__fixtures__', 'wandb-standin');
const saved = {
  PYTHONPATH: process.env.PYTHONPATH,
  ATK_WANDB_RECORD: process.env.ATK_WANDB_RECORD,
  ATK_WANDB_FAIL_AT: process.env.ATK_WANDB_FAIL_AT,
};
afterEach(() => {
  for (const [key, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
});

function recording(failAt?: 'init' | 'log'): string {
  const record = join(mkdtempSync(join(tmpdir(), 'atk-wandb-')), 'calls.jsonl');
  process.env.PYTHONPATH = standin;
  process.env.ATK_WANDB_RECORD = record;
  if (failAt) process.env.ATK_WANDB_FAIL_AT = failAt;
  return record;
}
const calls = (record: string): unknown[] =>
  existsSync(record)
    ? readFileSync(record, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as unknown)
    : [];

/** A tracker set with wandb alone, in a fresh directory, collecting its warnings in `warnings`. */
function wandbOnly(warnings: string[]): TrackerSet {
  return new TrackerSet({
    trackers: ['wandb'],
    dir: mkdtempSync(join(tmpdir(), 'atk-trackers-')),
    runName: 'r/v001',
    config: {},
    warn: (m) => warnings.push(m),
  });
}

describe('startWandbTracker', () => {
  test('returns a tracker whose init, log and close reach the client as wandb.init, run.log(step=) and run.finish', async () => {
    const record = recording();
    const config = { name: 'quickstart', algorithm: { name: 'grpo', group_size: 8 } };
    const tracker = await startWandbTracker({
      project: 'p',
      entity: 'team',
      name: 'quickstart/v001',
      tags: ['cpu', 'arith'],
      config,
      dir: '/tmp/run',
    });
    await tracker.log({
      step: 1,
      wallTime: 0,
      values: [
        ['reward/mean', 0.5],
        ['train/loss', -0.25],
      ],
    });
    await tracker.log({ step: 2, wallTime: 0, values: [['eval/accuracy', 0.75]] });
    await tracker.close();
    expect(calls(record)).toStrictEqual([
      {
        call: 'init',
        project: 'p',
        entity: 'team',
        name: 'quickstart/v001',
        tags: ['cpu', 'arith'],
        config,
        dir: '/tmp/run',
      },
      { call: 'log', data: { 'reward/mean': 0.5, 'train/loss': -0.25 }, step: 1 },
      { call: 'log', data: { 'eval/accuracy': 0.75 }, step: 2 },
      { call: 'finish' },
    ]);
  });
});

describe('TrackerSet', () => {
  test('returns after warning once when wandb fails at init, while tensorboard keeps every step', async () => {
    recording('init');
    const dir = mkdtempSync(join(tmpdir(), 'atk-trackers-'));
    const warnings: string[] = [];
    const set = new TrackerSet({
      trackers: ['wandb', 'tensorboard'],
      dir,
      runName: 'r/v001',
      config: {},
      warn: (m) => warnings.push(m),
    });
    for (let step = 1; step <= 3; step++) set.log({ kind: 'train', step, 'reward/mean': step / 4 });
    await set.close();
    expect(warnings).toStrictEqual([
      'tracker wandb failed and is off for the rest of the run (the run goes on): PermissionError: invalid API key',
    ]);
    expect(
      readEventDir(join(dir, 'tb'))
        .slice(1)
        .map((e) => [e.step, e.values[0]!.simpleValue]),
    ).toStrictEqual([
      [1, 0.25],
      [2, 0.5],
      [3, 0.75],
    ]);
  });

  test('returns after one warning when logging fails mid-run, and one when the wandb package is absent', async () => {
    recording('log');
    const warnings: string[] = [];
    const failing = wandbOnly(warnings);
    for (let step = 1; step <= 3; step++) failing.log({ kind: 'train', step, 'reward/mean': 1 });
    await failing.close();
    expect(warnings).toStrictEqual([
      'tracker wandb failed and is off for the rest of the run (the run goes on): ConnectionError: api.wandb.ai unreachable',
    ]);

    // A wandb that cannot be imported, as on a machine without the package (whatever this one has).
    process.env.PYTHONPATH = mkdtempSync(join(tmpdir(), 'atk-nowandb-'));
    writeFileSync(join(process.env.PYTHONPATH, 'wandb.py'), 'raise ImportError("No module named \'wandb\'")\n');
    const absent: string[] = [];
    const set = wandbOnly(absent);
    set.log({ kind: 'train', step: 1, 'reward/mean': 1 });
    await set.close();
    expect(absent).toHaveLength(1);
    expect(absent[0]).toMatch(
      /^tracker wandb failed .*: the wandb Python package is not installed .*pip install wandb$/,
    );
  });
});
