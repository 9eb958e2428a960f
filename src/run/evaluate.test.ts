import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { EngineDouble } from '../__fixtures__/engine-double.js';
import { RECORDED_TASKS, scriptedKit, writeFixtureRecipe } from '../__fixtures__/recorded-run.js';
import { EpisodeFailure, type EpisodeErrorKind } from '../agent/episode-failure.js';
import { rolloutOnThrow, type EpisodeKit, type Rollout } from '../rollout/collect.js';
import { evaluate, PARTIAL_RESULTS, summarize, type EvalOptions } from './evaluate.js';

let root: string;
let kit: EpisodeKit;
let double: EngineDouble;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'atk-evaluate-'));
  ({ kit, double } = await scriptedKit(await writeFixtureRecipe(root)));
});
afterAll(async () => {
  await kit.close?.();
  await double.close();
  await rm(root, { recursive: true, force: true });
});

const options = (outDir: string, extra: Partial<EvalOptions> = {}): EvalOptions => ({
  label: 'base',
  split: 'test',
  step: 0,
  policyVersion: 0,
  samples: 2,
  temperature: 0,
  topP: 1,
  topK: -1,
  concurrency: 3,
  seed: 0,
  outDir,
  ...extra,
});

const lines = async (file: string): Promise<Record<string, unknown>[]> =>
  (await readFile(file, 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('evaluate', () => {
  test('returns the summary, writes every episode, and reports each as it finishes', async () => {
    const out = join(root, 'full');
    const seen: number[] = [];
    const summary = await evaluate(
      kit,
      RECORDED_TASKS,
      options(out, { onEpisode: (done, total) => seen.push(done * 100 + total) }),
    );
    expect(seen).toStrictEqual([1, 2, 3, 4, 5, 6, 7, 8].map((d) => d * 100 + 8));
    expect(summary).toMatchObject({
      tasks: 4,
      samples: 2,
      accuracy: 0.5,
      pass_at_k: { 'pass@1': 0.5, 'pass@2': 0.5 },
      tool_error_rate: 0.25,
    });
    expect((await lines(join(out, 'results.jsonl'))).map((r) => [r.task_id, r.sample])).toHaveLength(8);
    await expect(stat(join(out, PARTIAL_RESULTS))).rejects.toThrow();
  });

  test('returns the same results on --resume after an interruption, running only missing and errored episodes', async () => {
    const full = join(root, 'full');
    const first = await lines(join(full, 'results.jsonl'));
    const out = join(root, 'interrupted');
    await evaluate(kit, RECORDED_TASKS, options(out));
    await rm(join(out, 'results.jsonl'));
    // What a killed eval leaves: three finished episodes, one harness failure and a torn line.
    const failed = { ...first[3], failed: true, error: 'engine died' };
    await writeFile(
      join(out, PARTIAL_RESULTS),
      `${[first[0], first[1], first[5], failed].map((r) => JSON.stringify(r)).join('\n')}\n{"task_id": "mul-1", "sam`,
    );
    const before = double.requests.length;
    const summary = await evaluate(kit, RECORDED_TASKS, options(out, { resume: true }));
    // Five episodes ran again, two engine calls each (tool call, then answer).
    expect(double.requests.length - before).toBe(10);
    expect(summary).toStrictEqual(JSON.parse(await readFile(join(full, 'summary.json'), 'utf8')));
    const again = await lines(join(out, 'results.jsonl'));
    const strip = (r: Record<string, unknown>): unknown => ({
      ...r,
      stats: { ...(r.stats as object), wallMs: 0, engineMs: 0 },
    });
    expect(again.map(strip)).toStrictEqual(first.map(strip));
    await expect(stat(join(out, PARTIAL_RESULTS))).rejects.toThrow();
  });
});

describe('summarize', () => {
  test('returns failed/<kind> counts beside failed_episodes, as a training step reports them', () => {
    const fail = rolloutOnThrow(0);
    const task = RECORDED_TASKS[0]!;
    const failed = (kind: EpisodeErrorKind, group: number, sample: number): Rollout =>
      fail({ task, group, sample }, new EpisodeFailure(kind, new Error(`${kind} broke`)));
    const passed: Rollout = { ...failed('engine', 1, 1), failed: false, success: true, reward: 1 };
    const { failed_episodes, ...rest } = summarize(
      [
        [failed('engine', 0, 0), failed('engine', 0, 1)],
        [failed('tool', 1, 0), passed],
      ],
      { label: 'e', split: 'test', samples: 2 },
    );
    expect([failed_episodes, rest['failed/engine'], rest['failed/tool'], rest['failed/reward']]).toStrictEqual([
      3,
      2,
      1,
      undefined,
    ]);
  });
});
