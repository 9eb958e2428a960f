import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { InputError } from '../../errors/index.js';

/** Statistics of one episode as trajectory lines record them (`EpisodeStats`). */
const StatsSchema = z.object({
  turns: z.number(),
  toolCalls: z.number(),
  toolErrors: z.number(),
  // Lines written before the count existed have none: one user message, the first prompt.
  userTurns: z.number().default(1),
  toolErrorsByKind: z.record(z.string(), z.number()).default({}),
  toolCallsByTool: z.record(z.string(), z.number()).default({}),
  toolErrorsByTool: z.record(z.string(), z.number()).default({}),
  truncated: z.boolean().default(false),
  promptTokens: z.number(),
  generatedTokens: z.number(),
  wallMs: z.number(),
  engineMs: z.number().default(0),
  historyRewrites: z.number().optional(),
  contextDroppedTokens: z.number().optional(),
});

/**
 * One line of `trajectories/step-NNNNN.jsonl` or `eval/<label>/results.jsonl` (see `trajectoryRecord`):
 * the fields the viewers read; the token trajectory stays unparsed until a view needs it.
 */
export const TrajectoryRecordSchema = z.object({
  step: z.number(),
  group: z.number(),
  sample: z.number(),
  task_id: z.string(),
  policy_version: z.number(),
  reward: z.number(),
  reward_parts: z.record(z.string(), z.number()).default({}),
  reward_info: z.record(z.string(), z.unknown()).optional(),
  success: z.boolean(),
  advantage: z.number().nullable().default(null),
  failed: z.boolean().default(false),
  error: z.string().optional(),
  /** The layer a failed episode broke in (see EpisodeErrorKind), counted as `failed/<kind>` in the metrics. */
  error_kind: z.string().optional(),
  finish_reason: z.string(),
  stats: StatsSchema,
  messages: z.array(z.unknown()),
  trajectory: z.unknown(),
  /** Episodes split in segments (a gateway agent's rewrite, reasoning strip, context management): the earlier segments, why each ended (see restorePriorSegments). */
  prior_segments: z
    .array(
      z.object({
        ended_because: z.string(),
        shared_prefix: z.number().optional(),
        trajectory: z.unknown(),
        messages: z.array(z.unknown()).optional(),
      }),
    )
    .optional(),
  /** The built-in agent's split episodes: the conversation the last segment rendered (chat-template messages). */
  segment_messages: z.array(z.unknown()).optional(),
  /** External agents: the end of their stderr. */
  agent_log: z.string().optional(),
  /** External agents: the tools their requests carried (chat-template form). */
  tools: z.array(z.unknown()).optional(),
});

export type TrajectoryRecord = z.infer<typeof TrajectoryRecordSchema>;
export type EpisodeStatsRecord = z.infer<typeof StatsSchema>;

/** A record with where it came from, so messages can say `file:line`. */
export interface LocatedRecord {
  readonly record: TrajectoryRecord;
  readonly file: string;
  readonly line: number;
}

/**
 * Reads every record of a trajectory or eval results file, streaming line by line (files of long runs
 * are large). Blank lines are skipped.
 * @throws InputError naming `file:line` for a line that is not JSON or not a trajectory record.
 */
export async function readTrajectoryFile(file: string): Promise<LocatedRecord[]> {
  const records: LocatedRecord[] = [];
  let line = 0;
  const lines = createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity });
  try {
    for await (const text of lines) {
      line++;
      if (text.trim() === '') continue;
      records.push({ record: parseTrajectoryLine(text, `${file}:${line}`), file, line });
    }
  } catch (error) {
    if (error instanceof InputError) throw error;
    throw new InputError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  return records;
}

/**
 * Parses one JSONL line into a trajectory record.
 * @throws InputError naming `where` and the first invalid field.
 */
export function parseTrajectoryLine(text: string, where: string): TrajectoryRecord {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new InputError(`${where}: not a JSON line`, {
      hint: 'point at a trajectories/step-NNNNN.jsonl or eval/<label>/results.jsonl file',
    });
  }
  const parsed = TrajectoryRecordSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new InputError(
      `${where}: not a trajectory record (${issue?.path.join('.') || 'line'}: ${issue?.message ?? 'invalid'})`,
      {
        hint: 'trajectory lines are written by atk run (trajectories/) and atk eval (eval/<label>/results.jsonl)',
      },
    );
  }
  return parsed.data;
}
