/**
 * What every episode of a run with an `agent.context` sliding window must show in its trajectory line,
 * checked the same way by the long-episode smoke and by its kill-and-resume: the episode goes on in a new
 * segment exactly when a prompt passes the budget, each new segment keeps the task and only the last
 * turns (the earlier ones are dropped and counted), and every segment's generated tokens, only they, are
 * trained.
 */
import { expect } from 'vitest';
import type { TrajectoryRecord } from '../../src/ui/trajectory/record.js';
import { recordedSegments, type RecordedSegment } from '../../src/ui/trajectory/segments.js';

/** The recipe's `agent.context` as the checks read it. */
export interface WindowSettings {
  readonly budgetTokens: number;
  readonly keepLastTurns: number;
}

/** How many segments an episode was split into. */
export const segmentsOf = (line: TrajectoryRecord): number => 1 + (line.prior_segments?.length ?? 0);

/**
 * Asserts that `line`, an episode of a run windowed by `settings`, was split exactly as the window says
 * (see the module comment); returns its segments.
 */
export function expectWindowedEpisode(line: TrajectoryRecord, settings: WindowSettings): RecordedSegment[] {
  const segments = recordedSegments(line);
  expect(segments.map((s) => s.endedBecause)).toStrictEqual([
    ...Array(segments.length - 1).fill('sliding_window'),
    undefined,
  ]);
  for (const { trajectory } of segments) {
    const mask = trajectory.mask();
    // Each segment starts from a whole prompt; generated tokens carry the engine's logprobs and only
    // they are trained; prompt, customer and tool tokens are mask 0.
    expect(trajectory.segments[0]!.source).toBe('prompt');
    expect(trajectory.logprobsFull().map((l) => (l === null ? 0 : 1))).toStrictEqual(mask);
    for (const s of trajectory.segments)
      expect(new Set(mask.slice(s.start, s.start + s.length))).toStrictEqual(new Set([s.source === 'model' ? 1 : 0]));
    expect(mask).toContain(1);
  }
  // Within a segment a prompt was extended only while it fit; an episode never split never passed it.
  for (const segment of segments)
    for (const p of prompts(segment).slice(1)) expect(p).toBeLessThanOrEqual(settings.budgetTokens);
  if (segments.length === 1) {
    expect(prompts(segments[0]!).every((p) => p <= settings.budgetTokens)).toBe(true);
    expect(line.stats.contextDroppedTokens ?? 0).toBe(0);
    return segments;
  }
  // Each rewrite left tokens out, and the episode's stats count them.
  expect(line.stats.contextDroppedTokens).toBeGreaterThan(0);
  const first = segments[0]!.trajectory;
  const head = first.ids.slice(0, first.segments[0]!.length);
  for (const [i, segment] of segments.entries()) {
    if (i === 0) continue;
    // The window keeps the system prompt and task, so a new segment begins with the first one's prompt...
    expect(segment.trajectory.ids.slice(0, head.length)).toStrictEqual(head);
    // ...then only the last keep_last_turns of the turns before it: the earlier ones were dropped.
    const kept = promptReplies(segment);
    const before = replies(segments[i - 1]!);
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThanOrEqual(settings.keepLastTurns);
    expect(kept.length).toBeLessThan(before.length);
    expect(kept).toStrictEqual(before.slice(-kept.length));
  }
  return segments;
}

/** The prompt length before each of a segment's model turns (where each generated part starts). */
function prompts(segment: RecordedSegment): number[] {
  return segment.trajectory.segments.filter((s) => s.source === 'model').map((s) => s.start);
}

/** The assistant messages of a segment's conversation (the head, up to the task, has none). */
function replies(segment: RecordedSegment): unknown[] {
  return (segment.messages ?? []).filter((m) => (m as { role: string }).role === 'assistant');
}

/** Of a segment's conversation, the assistant messages its first prompt held (those it generated come after). */
function promptReplies(segment: RecordedSegment): unknown[] {
  const all = replies(segment);
  return all.slice(0, all.length - prompts(segment).length);
}
