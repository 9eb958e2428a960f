import { auditRecordedDrift } from '../../rollout/episode-drift.js';
import type { ChatTool, DriftReport, ModelTokenizer, TokenTrajectory } from '../../tokens/index.js';
import type { TrajectoryRecord } from './record.js';
import { runToolSpecs, type RunModel } from './run-context.js';

/** A drift audit of a recorded episode, with a note when the prompt's tools could not be rebuilt. */
export interface RecordedDrift {
  readonly report: DriftReport;
  readonly toolsNote?: string;
}

/**
 * The drift audit of a recorded episode (what `atk inspect-trajectory --drift` and `atk view` show).
 * The recipe's tools are rebuilt to render the prompt; when they cannot be, the audit runs without
 * them and says so, since the prompt's tool list will then show as drift.
 */
export async function recordedDrift(
  record: TrajectoryRecord,
  trajectory: TokenTrajectory,
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
  const report = auditRecordedDrift(
    { messages: record.messages, trajectory },
    tokenizer,
    toolList,
    runModel?.chatTemplateKwargs ?? {},
  );
  return toolsNote ? { report, toolsNote } : { report };
}
