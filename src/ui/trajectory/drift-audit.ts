import { auditRecordedDrift } from '../../rollout/episode-drift.js';
import type { ChatTool, DriftReport, ModelTokenizer } from '../../tokens/index.js';
import type { TrajectoryRecord } from './record.js';
import { runToolSpecs, type RunModel } from './run-context.js';
import type { RecordedSegment } from './segments.js';

/** A drift audit of a recorded episode, with a note when the prompt's tools could not be rebuilt. */
export interface RecordedDrift {
  /** The last segment's audit (the whole episode's when it was never split). */
  readonly report: DriftReport;
  /**
   * Each segment's audit against the conversation it rendered, in order (one for an unsplit episode);
   * null for an earlier segment whose conversation the line does not record (a gateway agent's).
   */
  readonly segments: readonly (DriftReport | null)[];
  readonly toolsNote?: string;
}

/**
 * The drift audit of a recorded episode (what `atk inspect-trajectory --drift` and `atk view` show):
 * each segment against its own conversation, since a window or summary renders a conversation other
 * than the episode's. The recipe's tools are rebuilt to render the prompt; when they cannot be, the
 * audit runs without them and says so, since the prompt's tool list will then show as drift.
 */
export async function recordedDrift(
  record: TrajectoryRecord,
  segments: readonly RecordedSegment[],
  tokenizer: ModelTokenizer,
  runModel: RunModel | undefined,
  tools?: readonly ChatTool[],
): Promise<RecordedDrift> {
  // A gateway episode records the tools its agent sent; those rendered its prompt.
  const recorded = tools ?? (record.tools as readonly ChatTool[] | undefined);
  let toolList: readonly ChatTool[] = recorded ?? [];
  let toolsNote: string | undefined;
  if (recorded === undefined && runModel) {
    try {
      toolList = await runToolSpecs(runModel);
    } catch (error) {
      toolsNote = `tools could not be rebuilt from the recipe (${(error as Error).message}); the prompt's tool list will show as drift`;
    }
  } else if (recorded === undefined && record.stats.toolCalls > 0) {
    toolsNote = "no run directory, so the tools are unknown; the prompt's tool list will show as drift";
  }
  const reports = segments.map((segment) =>
    segment.messages === undefined
      ? null
      : auditRecordedDrift(
          { messages: [...segment.messages], trajectory: segment.trajectory },
          tokenizer,
          toolList,
          runModel?.chatTemplateKwargs ?? {},
        ),
  );
  // The last segment always has its conversation (the line's segment_messages, else its messages).
  const report = reports.at(-1) as DriftReport;
  return toolsNote ? { report, segments: reports, toolsNote } : { report, segments: reports };
}
