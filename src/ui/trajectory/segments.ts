import { restorePriorSegments, type PriorSegmentRecord } from '../../run/step-record.js';
import { TokenTrajectory, type TrajectoryJSON } from '../../tokens/index.js';
import type { TrajectoryRecord } from './record.js';

/** One trajectory segment of a recorded episode, whole (its shared prefix put back). */
export interface RecordedSegment {
  readonly trajectory: TokenTrajectory;
  /** Why the episode went on in a new segment after this one; undefined for the last segment. */
  readonly endedBecause: string | undefined;
  /**
   * The conversation the segment rendered, through its last reply, when the line records it (the
   * built-in agent's split episodes); undefined for a gateway agent's earlier segments.
   */
  readonly messages: readonly unknown[] | undefined;
}

/**
 * Every segment of a recorded episode in order, the line's own trajectory last; an episode never
 * split is one segment whose conversation is the episode's.
 * @throws Error when a stored trajectory is not one (the caller names the file).
 */
export function recordedSegments(record: TrajectoryRecord): RecordedSegment[] {
  const prior = restorePriorSegments(
    (record.prior_segments ?? []) as unknown as readonly PriorSegmentRecord[],
    record.trajectory as TrajectoryJSON,
  );
  return [
    ...prior.map((s) => ({
      trajectory: TokenTrajectory.fromJSON(s.trajectory),
      endedBecause: s.endedBecause,
      messages: s.messages,
    })),
    {
      trajectory: TokenTrajectory.fromJSON(record.trajectory),
      endedBecause: undefined,
      messages: record.segment_messages ?? record.messages,
    },
  ];
}

/** `segment 2 of 3 (then sliding_window)`: a segment's place and why the next one started. */
export function segmentLabel(index: number, segments: readonly RecordedSegment[]): string {
  const reason = segments[index]!.endedBecause;
  return `segment ${index + 1} of ${segments.length}${reason ? ` (then a new segment: ${reason})` : ''}`;
}
