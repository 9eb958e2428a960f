/**
 * recipes/smoke/long-episode.yaml end to end through the built CLI: the tiny model on a CPU with an
 * agent.context budget its second prompt passes, so every episode continues in a new segment
 * (sliding_window). The trajectory file keeps every segment with exact tokens, each trained with the
 * episode's advantage; the metrics count the segments; inspect-trajectory shows each segment and its
 * drift audit, which finds none since each segment is audited against the conversation it rendered.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restorePriorSegments, type PriorSegmentRecord } from '../../src/run/step-record.js';
import { TokenTrajectory, type TrajectoryJSON } from '../../src/tokens/index.js';
import { projectRoot } from '../../src/util/paths.js';
import { atkRun, BIN, onlyRun, readJsonl, tempRunsDir } from './run-helpers.js';

type Line = Record<string, unknown> & {
  advantage: number | null;
  trajectory: TrajectoryJSON;
  prior_segments?: PriorSegmentRecord[];
};

let runsDir: string;
let dir: string;
let exitCode: number | undefined;
let stderr: string;

beforeAll(async () => {
  runsDir = tempRunsDir();
  const result = await atkRun(['recipes/smoke/long-episode.yaml'], runsDir);
  exitCode = result.exitCode;
  stderr = result.stderr;
  dir = onlyRun(runsDir, 'smoke-long-episode');
}, 300_000);

afterAll(() => rmSync(runsDir, { recursive: true, force: true }));

/** Every segment of a line, whole, in order. */
function segmentsOf(line: Line): { endedBecause: string | undefined; trajectory: TokenTrajectory }[] {
  return [
    ...restorePriorSegments(line.prior_segments ?? [], line.trajectory).map((s) => ({
      endedBecause: s.endedBecause,
      trajectory: TokenTrajectory.fromJSON(s.trajectory),
    })),
    { endedBecause: undefined, trajectory: TokenTrajectory.fromJSON(line.trajectory) },
  ];
}

const inspect = (args: readonly string[]) =>
  execa('node', [BIN, 'inspect-trajectory', dir, ...args], { reject: false, cwd: projectRoot() });

describe('a run whose episodes outgrow agent.context.budget_tokens', () => {
  it('finishes, every episode split by the sliding window into segments of exact tokens', () => {
    expect([exitCode, stderr]).toStrictEqual([0, '']);
    const lines = readJsonl(join(dir, 'trajectories', 'step-00001.jsonl')) as Line[];
    expect(lines.length).toBe(4);
    for (const line of lines) {
      const segments = segmentsOf(line);
      expect(segments.map((s) => s.endedBecause)).toStrictEqual([
        ...Array(segments.length - 1).fill('sliding_window'),
        undefined,
      ]);
      expect(segments.length).toBeGreaterThan(1);
      for (const [i, { trajectory }] of segments.entries()) {
        const mask = trajectory.mask();
        // Each segment starts from a whole prompt, generated tokens carry the engine's logprobs and
        // only they are trained; prompt and tool tokens are mask 0.
        expect(trajectory.segments[0]!.source).toBe('prompt');
        expect(trajectory.logprobsFull().map((l) => (l === null ? 0 : 1))).toStrictEqual(mask);
        for (const s of trajectory.segments)
          expect(new Set(mask.slice(s.start, s.start + s.length))).toStrictEqual(
            new Set([s.source === 'model' ? 1 : 0]),
          );
        expect(mask).toContain(1);
        // The window keeps the system prompt and task, so a new segment begins with its predecessor's prompt.
        if (i > 0) {
          const before = segments[i - 1]!.trajectory;
          const prompt = before.ids.slice(0, before.segments[0]!.length);
          expect(trajectory.ids.slice(0, prompt.length)).toStrictEqual(prompt);
        }
      }
    }
  });

  it('trains every segment of an episode with an advantage, and logs the segment metrics', () => {
    const lines = readJsonl(join(dir, 'trajectories', 'step-00001.jsonl')) as Line[];
    const trained = lines.filter((l) => l.advantage !== null);
    expect(trained.length).toBeGreaterThan(0);
    const train = readJsonl(join(dir, 'metrics.jsonl')).filter((l) => l.kind === 'train');
    expect(train.length).toBe(1);
    // Every segment of every episode with an advantage went to the trainer as a sequence of its own.
    expect(train[0]!['train/sequences']).toBe(trained.reduce((n, l) => n + segmentsOf(l).length, 0));
    const perEpisode = lines.reduce((n, l) => n + segmentsOf(l).length, 0) / lines.length;
    expect(train[0]!['segments/per_episode']).toBe(perEpisode);
    expect(train[0]!['segments/rewrites/sliding_window']).toBe(perEpisode - 1);
    expect(train[0]!['segments/context_dropped_tokens']).toBeGreaterThanOrEqual(0);
    for (const evalLine of readJsonl(join(dir, 'metrics.jsonl')).filter((l) => l.kind === 'eval'))
      expect(evalLine['segments/per_episode']).toBeGreaterThan(1);
  });

  it('inspect-trajectory shows every segment with its reason, its tokens, and no drift in any', async () => {
    const plain = await inspect(['--episode', '0']);
    expect(plain.exitCode).toBe(0);
    expect(plain.stdout).toMatch(
      /segment 1 of 2 \(then a new segment: sliding_window\): \d+ environment \+ \d+ generated tokens/,
    );
    expect(plain.stdout).toMatch(/segment 2 of 2: \d+ environment \+ \d+ generated tokens/);

    const tokens = await inspect(['--episode', '0', '--tokens']);
    expect(tokens.exitCode).toBe(0);
    const banners = tokens.stdout.split('\n').filter((l) => l.startsWith('══ segment'));
    expect(banners).toStrictEqual([
      '══ segment 1 of 2 (then a new segment: sliding_window) ══',
      '══ segment 2 of 2 ══',
    ]);

    const drift = await inspect(['--episode', '0', '--drift', '--json']);
    expect(drift.exitCode).toBe(0);
    const report = JSON.parse(drift.stdout) as {
      segments: { ended_because: string | null; drift: { identical: boolean; trajectoryTokens: number } }[];
    };
    const line = (readJsonl(join(dir, 'trajectories', 'step-00001.jsonl')) as Line[])[0]!;
    expect(report.segments.map((s) => [s.ended_because, s.drift.identical, s.drift.trajectoryTokens])).toStrictEqual(
      segmentsOf(line).map((s) => [s.endedBecause ?? null, true, s.trajectory.length]),
    );
  });
});
