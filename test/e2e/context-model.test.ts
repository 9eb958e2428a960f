/**
 * recipes/smoke/context-model.yaml end to end through the built CLI: helpdesk conversations past an
 * agent.context summarize budget, summarised by a fixed model (agent.context.model) on a second embedded
 * engine. resolved.yaml names the summariser; every rewrite is a segment ended with reason
 * summarized_fixed whose successor's prompt carries the summary as environment tokens; the trainer is
 * handed the policy's generated tokens and nothing of the summariser's.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUMMARY_HEADER } from '../../src/agent/long-episode.js';
import { restorePriorSegments, type PriorSegmentRecord } from '../../src/run/step-record.js';
import { loadModelTokenizer, TokenTrajectory, type TrajectoryJSON } from '../../src/tokens/index.js';
import { projectRoot } from '../../src/util/paths.js';
import { atkRun, onlyRun, readJsonl, tempRunsDir } from './run-helpers.js';

type Line = Record<string, unknown> & {
  advantage: number | null;
  stats: { generatedTokens: number; turns: number };
  trajectory: TrajectoryJSON;
  prior_segments?: PriorSegmentRecord[];
};

const MODEL = join(projectRoot(), 'models', 'tiny-helpdesk');
let runsDir: string;
let dir: string;
let exitCode: number | undefined;
let stderr: string;

beforeAll(async () => {
  runsDir = tempRunsDir();
  const result = await atkRun(['recipes/smoke/context-model.yaml', '--no-tui'], runsDir);
  exitCode = result.exitCode;
  stderr = result.stderr;
  dir = onlyRun(runsDir, 'smoke-context-model');
}, 300_000);

afterAll(() => rmSync(runsDir, { recursive: true, force: true }));

/** Every segment of a line, whole, in order, with why it ended. */
function segmentsOf(line: Line): { endedBecause: string | undefined; trajectory: TokenTrajectory }[] {
  return [
    ...restorePriorSegments(line.prior_segments ?? [], line.trajectory).map((s) => ({
      endedBecause: s.endedBecause,
      trajectory: TokenTrajectory.fromJSON(s.trajectory),
    })),
    { endedBecause: undefined, trajectory: TokenTrajectory.fromJSON(line.trajectory) },
  ];
}

describe('a run whose summaries come from agent.context.model', () => {
  it('finishes, with the summariser in resolved.yaml and its own logs', () => {
    expect([exitCode, stderr]).toStrictEqual([0, '']);
    const resolved = readFileSync(join(dir, 'resolved.yaml'), 'utf8');
    expect(resolved).toContain(`    model: ${MODEL}\n    engine:\n      kind: embedded\n`);
    expect(existsSync(join(dir, 'logs', 'context-model', 'trainer.log'))).toBe(true);
  });

  it('continues rewritten episodes in segments ended by summarized_fixed, each carrying the summary as environment tokens', async () => {
    const tokenizer = await loadModelTokenizer(MODEL);
    const lines = readJsonl(join(dir, 'trajectories', 'step-00001.jsonl')) as Line[];
    expect(lines.length).toBe(8);
    const rewritten = lines.filter((l) => (l.prior_segments?.length ?? 0) > 0);
    expect(rewritten.length).toBeGreaterThan(0);
    for (const line of lines) {
      const segments = segmentsOf(line);
      expect(segments.map((s) => s.endedBecause)).toStrictEqual([
        ...Array(segments.length - 1).fill('summarized_fixed'),
        undefined,
      ]);
      for (const { trajectory } of segments.slice(1)) {
        const prompt = trajectory.ids.slice(0, trajectory.promptLength);
        expect(tokenizer.decode(prompt)).toContain(`<|im_start|>user\n${SUMMARY_HEADER}\n`);
        expect(trajectory.mask().slice(0, prompt.length)).toStrictEqual(prompt.map(() => 0));
      }
      // Trained tokens (mask 1) are the policy's generated tokens only, in every segment.
      const trained = segments.reduce((n, { trajectory }) => n + trajectory.mask().filter((m) => m === 1).length, 0);
      const generated = segments.reduce(
        (n, { trajectory }) =>
          n + trajectory.segments.filter((s) => s.source === 'model').reduce((a, s) => a + s.length, 0),
        0,
      );
      expect([trained, generated]).toStrictEqual([line.stats.generatedTokens, line.stats.generatedTokens]);
    }
  });

  it("trains the policy's tokens and none of the summariser's, and logs the rewrites by reason", () => {
    const lines = readJsonl(join(dir, 'trajectories', 'step-00001.jsonl')) as Line[];
    const [train] = readJsonl(join(dir, 'metrics.jsonl')).filter((l) => l.kind === 'train');
    const trained = lines.filter((l) => l.advantage !== null);
    expect(train!['train/tokens']).toBe(trained.reduce((n, l) => n + l.stats.generatedTokens, 0));
    expect(train!['train/sequences']).toBe(trained.reduce((n, l) => n + segmentsOf(l).length, 0));
    const rewrites = lines.reduce((n, l) => n + (l.prior_segments?.length ?? 0), 0) / lines.length;
    expect(train!['segments/rewrites/summarized_fixed']).toBe(rewrites);
    expect(Object.keys(train!).filter((k) => k.startsWith('segments/rewrites/'))).toStrictEqual([
      'segments/rewrites/summarized_fixed',
    ]);
  });
});
