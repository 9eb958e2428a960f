/**
 * recipes/smoke/long-episode.yaml end to end through the built CLI: the tiny help-desk model on a CPU in
 * conversations with the scripted customer, under an agent.context budget its fourth prompt passes. An
 * episode continues in a new segment (sliding_window) exactly when a prompt passes the budget, and the
 * new segment's prompt keeps the task and only the last turn: turns are dropped, in CI. The trajectory
 * file keeps every segment with exact tokens, each trained with the episode's advantage; the metrics
 * count the segments and the dropped tokens; the drift audit of every segment finds none, since each is
 * audited against the conversation it rendered.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadRecipe } from '../../src/recipe/index.js';
import type { ModelTokenizer } from '../../src/tokens/index.js';
import { recordedDrift } from '../../src/ui/trajectory/drift-audit.js';
import { readTrajectoryFile, type TrajectoryRecord } from '../../src/ui/trajectory/record.js';
import { readRunModel, runTokenizer, type RunModel } from '../../src/ui/trajectory/run-context.js';
import { recordedSegments } from '../../src/ui/trajectory/segments.js';
import { projectRoot } from '../../src/util/paths.js';
import { atkRun, BIN, onlyRun, readJsonl, tempRunsDir } from './run-helpers.js';
import { expectWindowedEpisode, segmentsOf, type WindowSettings } from './windowed-episodes.js';

let runsDir: string;
let dir: string;
let exitCode: number | undefined;
let stderr: string;
let windowed: WindowSettings;

beforeAll(async () => {
  runsDir = tempRunsDir();
  const result = await atkRun(['recipes/smoke/long-episode.yaml'], runsDir);
  exitCode = result.exitCode;
  stderr = result.stderr;
  dir = onlyRun(runsDir, 'smoke-long-episode');
  const { recipe } = await loadRecipe(join(dir, 'resolved.yaml'));
  const context = recipe.agent.context;
  if (context.strategy !== 'sliding_window') throw new Error(`the smoke's strategy is ${context.strategy}`);
  windowed = { budgetTokens: context.budget_tokens!, keepLastTurns: context.keep_last_turns };
}, 300_000);

afterAll(() => rmSync(runsDir, { recursive: true, force: true }));

const stepFile = () => join(dir, 'trajectories', 'step-00001.jsonl');
const records = async (file: string) => (await readTrajectoryFile(file)).map((l) => l.record);
const evalFiles = () => ['step-00000', 'step-00001'].map((label) => join(dir, 'eval', label, 'results.jsonl'));

/** Tool-call errors of replies whose text does not parse as a call, so re-rendering the call cannot give it back. */
const UNPARSED = ['bad_json', 'bad_call', 'unterminated'] as const;

/** Whether an episode's replies come back token for token from text: every call parsed, every character whole. */
const roundTrips = (line: TrajectoryRecord) =>
  UNPARSED.every((kind) => !line.stats.toolErrorsByKind[kind]) && !JSON.stringify(line.messages).includes('\uFFFD');

const inspect = (args: readonly string[]) =>
  execa('node', [BIN, 'inspect-trajectory', dir, ...args], { reject: false, cwd: projectRoot() });

describe('a run whose conversations outgrow agent.context.budget_tokens', () => {
  it('finishes; an episode goes on in a new segment exactly when a prompt passes the budget, keeping the task and the last turn', async () => {
    expect([exitCode, stderr]).toStrictEqual([0, '']);
    const lines = await records(stepFile());
    expect(lines.length).toBe(16);
    const split = (line: TrajectoryRecord) => segmentsOf(line) > 1;
    // The greedy episode of each group (sample 0, rollout.greedy_per_group) is the model's own
    // conversation, ask, look up, act, reply: its fourth prompt passes the budget in every group.
    expect(lines.filter((l) => l.sample === 0).map(split)).toStrictEqual([true, true, true, true]);
    expect(lines.filter(split).length).toBeGreaterThanOrEqual(8);
    for (const line of lines) expectWindowedEpisode(line, windowed);
    // The evals decode greedily under the same window: each eval has a held-out conversation that passes it.
    for (const file of evalFiles()) {
      const segments = (await records(file)).map((line) => expectWindowedEpisode(line, windowed).length);
      expect(Math.max(...segments)).toBeGreaterThan(1);
    }
  });

  it('trains every segment of an episode with an advantage, and logs the segments and the dropped tokens', async () => {
    const lines = await records(stepFile());
    // Every episode sampled the first policy; the step trained it into the next.
    expect(new Set(lines.map((l) => l.policy_version))).toStrictEqual(new Set([0]));
    const trained = lines.filter((l) => l.advantage !== null);
    expect(trained.filter((l) => segmentsOf(l) > 1).length).toBeGreaterThan(0);
    const metrics = readJsonl(join(dir, 'metrics.jsonl'));
    const train = metrics.filter((l) => l.kind === 'train');
    expect(train.length).toBe(1);
    expect([train[0]!.policy_version, train[0]!['train/policy_version']]).toStrictEqual([1, 1]);
    // Every segment of every episode with an advantage went to the trainer as a sequence of its own.
    expect(train[0]!['train/sequences']).toBe(trained.reduce((n, l) => n + segmentsOf(l), 0));
    // The step's and each eval's figures are the means over their episodes of what the lines hold.
    const figures = (line: Record<string, unknown>) => [
      line['segments/per_episode'],
      line['segments/rewrites/sliding_window'],
      line['segments/context_dropped_tokens'],
    ];
    const means = (episodes: readonly TrajectoryRecord[]) => {
      const mean = (count: (l: TrajectoryRecord) => number) =>
        episodes.reduce((n, l) => n + count(l), 0) / episodes.length;
      return [mean(segmentsOf), mean((l) => segmentsOf(l) - 1), mean((l) => l.stats.contextDroppedTokens ?? 0)];
    };
    expect(figures(train[0]!)).toStrictEqual(means(lines));
    expect(means(lines)[2]).toBeGreaterThan(0);
    const evals = metrics.filter((l) => l.kind === 'eval');
    expect(evals.map((l) => l.label)).toStrictEqual(['step-00000', 'step-00001']);
    for (const line of evals) {
      const episodes = await records(join(dir, 'eval', line.label as string, 'results.jsonl'));
      expect(figures(line)).toStrictEqual(means(episodes));
      expect(means(episodes)[2]).toBeGreaterThan(0);
    }
  });

  it('finds no drift in a segment whose replies survive a round trip through text, none in any prompt; inspect-trajectory shows every segment', async () => {
    const runModel: RunModel = await readRunModel(dir);
    const tokenizer: ModelTokenizer = await runTokenizer(runModel);
    let audited = 0;
    for (const file of [stepFile(), ...evalFiles()])
      for (const line of await records(file)) {
        const segments = recordedSegments(line);
        const drift = await recordedDrift(line, segments, tokenizer, runModel);
        expect(drift.toolsNote).toBeUndefined();
        for (const [i, report] of drift.segments.entries()) {
          const trajectory = segments[i]!.trajectory;
          expect(report?.trajectoryTokens).toBe(trajectory.length);
          // Each segment's prompt is the template's rendering of the conversation it kept: the window
          // never puts in a prompt what its conversation does not say.
          expect(report!.firstDivergence ?? trajectory.length).toBeGreaterThanOrEqual(trajectory.segments[0]!.length);
        }
        // A sampled reply a text pipeline cannot reproduce (a malformed call, a character cut between
        // tokens) is drift whatever the window does; every other episode, split or not, has none.
        if (!roundTrips(line)) continue;
        expect(drift.segments.map((r) => r?.identical)).toStrictEqual(segments.map(() => true));
        if (segments.length > 1) audited++;
      }
    // The evals' greedy conversations and most of the step's.
    expect(audited).toBeGreaterThanOrEqual(8);

    // The CLI on the step's most split episode of those.
    const lines = await records(stepFile());
    const index = lines.reduce(
      (best, l, i) => (roundTrips(l) && segmentsOf(l) > segmentsOf(lines[best]!) ? i : best),
      lines.findIndex(roundTrips),
    );
    const count = segmentsOf(lines[index]!);
    expect(count).toBeGreaterThan(1);
    const plain = await inspect(['--episode', String(index)]);
    expect(plain.exitCode).toBe(0);
    for (let i = 1; i < count; i++)
      expect(plain.stdout).toMatch(
        new RegExp(
          `segment ${i} of ${count} \\(then a new segment: sliding_window\\): \\d+ environment \\+ \\d+ generated tokens`,
        ),
      );
    expect(plain.stdout).toMatch(
      new RegExp(`segment ${count} of ${count}: \\d+ environment \\+ \\d+ generated tokens`),
    );
    const drift = await inspect(['--episode', String(index), '--drift', '--json']);
    expect(drift.exitCode).toBe(0);
    const report = JSON.parse(drift.stdout) as {
      segments: { ended_because: string | null; drift: { identical: boolean } }[];
    };
    expect(report.segments.map((s) => [s.ended_because, s.drift.identical])).toStrictEqual([
      ...Array(count - 1).fill(['sliding_window', true]),
      [null, true],
    ]);
  });
});
