/**
 * The JSON of the viewer's API (`GET /api/<route>`), declared once for both of its sides: the server
 * (src/view/api.ts) types every answer with `ApiAnswers`, and the browser bundle (viewer/, built by
 * viewer/tsconfig.json) reads the answers with the same types. A declaration file holds types only,
 * so neither build emits anything for it; it imports only other declaration files (the drift report,
 * conversation turns), as the browser build has no Node types. The server's other types (tool-use
 * figures, trajectory lines) are checked against these where an answer is built, so a field renamed
 * there fails to compile.
 */
import type { DriftReport } from '../tokens/drift-report.js';
import type { ConversationPart, ConversationTurn } from '../ui/trajectory/conversation-turn.js';

export type { ConversationPart, ConversationTurn, DriftReport };

/** Every route and what it answers; a failed request answers `ApiError` instead. */
export interface ApiAnswers {
  readonly runs: { readonly runs: readonly RunRow[] };
  readonly metrics: MetricsAnswer;
  readonly sources: SourcesAnswer;
  readonly episodes: EpisodesAnswer;
  readonly episode: EpisodeAnswer;
  readonly tokens: EpisodeTokens;
  readonly task: TaskAnswer;
  readonly tools: ToolUseStats;
}

/** A route: the part of `/api/<route>` the server answers. */
export type ApiRoute = keyof ApiAnswers;

/** The body of a non-200 answer. */
export interface ApiError {
  readonly error: string;
}

/** `stale`: marked running, but its process on this host is gone (killed without a chance to say so). */
export type RunStatus = 'running' | 'finished' | 'failed' | 'interrupted' | 'stale';

/** A row of the runs table. */
export interface RunRow {
  readonly id: string;
  readonly name: string;
  readonly version: string;
  readonly dir: string;
  readonly status: RunStatus;
  readonly startedAt: string;
  readonly finishedAt: string | null;
  readonly durationS: number;
  readonly stepsDone: number;
  readonly stepsTotal: number | null;
  readonly lastReward: number | null;
  readonly bestReward: number | null;
  /** Held-out accuracy of the first and of the last eval (the same eval when there is one). */
  readonly evalBefore: { readonly label: string; readonly accuracy: number | null } | null;
  readonly evalAfter: { readonly label: string; readonly accuracy: number | null } | null;
  readonly dataset: string | null;
  readonly engine: string | null;
}

/** `/api/metrics`: training figures as columns (one array per figure, aligned with `steps`), and the eval lines. */
export interface MetricsAnswer {
  readonly run: RunRow;
  readonly train: MetricColumns;
  readonly evals: readonly (Readonly<Record<string, unknown>> & { readonly step?: number; readonly label?: string })[];
}

/** A 1,000-step run is one small answer: one array per figure rather than one object per step. */
export interface MetricColumns {
  readonly steps: readonly number[];
  readonly series: Readonly<Record<string, readonly (number | null)[]>>;
}

/** `/api/sources`: a run's files of episodes. */
export interface SourcesAnswer {
  readonly run: RunRow;
  readonly sources: readonly SourceInfo[];
}

/** A file of episodes: `step-NNNNN` (training) or `eval/<label>`. */
export interface SourceInfo {
  readonly id: string;
  readonly kind: 'train' | 'eval';
  readonly step: number;
}

/** What a row of the episodes table shows; `index` is the line's position in its file. */
export interface EpisodeSummary {
  readonly index: number;
  readonly step: number;
  readonly group: number;
  readonly sample: number;
  readonly taskId: string;
  readonly reward: number;
  readonly rewardParts: Readonly<Record<string, number>>;
  readonly success: boolean;
  /** The harness failed the episode (an exception), as opposed to a wrong answer. */
  readonly failed: boolean;
  readonly truncated: boolean;
  readonly finishReason: string;
  readonly turns: number;
  readonly toolCalls: number;
  readonly toolErrors: number;
  readonly generatedTokens: number;
  readonly promptTokens: number;
  readonly advantage: number | null;
  /** The last assistant text, cut short: what the table shows as the answer. */
  readonly answer: string;
}

/** One page of a query's result, with the count before paging. */
export interface EpisodePage {
  readonly total: number;
  readonly matched: number;
  readonly offset: number;
  readonly episodes: readonly EpisodeSummary[];
}

/** `/api/episodes`: one page of one source's episodes. */
export interface EpisodesAnswer extends EpisodePage {
  readonly source: string;
}

/** `/api/episode`: one episode's trajectory line (without its tokens) and its conversation. */
export interface EpisodeAnswer {
  readonly source: string;
  readonly record: EpisodeRecord;
  readonly turns: readonly ConversationTurn[];
}

/** A trajectory line as recorded, less the token trajectory (`/api/tokens` shows that). */
export interface EpisodeRecord {
  readonly step: number;
  readonly group: number;
  readonly sample: number;
  readonly task_id: string;
  readonly policy_version: number;
  readonly reward: number;
  readonly reward_parts: Readonly<Record<string, number>>;
  readonly reward_info?: Readonly<Record<string, unknown>>;
  readonly success: boolean;
  readonly advantage: number | null;
  readonly failed: boolean;
  readonly error?: string;
  readonly finish_reason: string;
  readonly stats: {
    readonly turns: number;
    readonly toolCalls: number;
    readonly toolErrors: number;
    readonly truncated: boolean;
    readonly promptTokens: number;
    readonly generatedTokens: number;
    readonly wallMs: number;
  };
  readonly messages: readonly unknown[];
}

/** `/api/tokens`: every token of an episode decoded, its segments, and the drift audit. Tokens are tuples to keep long episodes small on the wire. */
export interface EpisodeTokens {
  /** Tokens of every trajectory segment of the episode together. */
  readonly length: number;
  /** Source spans, every trajectory segment's in order; `episodeSegment` indexes `episodeSegments`. */
  readonly segments: readonly {
    readonly source: 'prompt' | 'model' | 'tool' | 'user';
    readonly start: number;
    readonly length: number;
    readonly turn: number;
    readonly policyVersion: number | null;
    readonly finishReason: string | null;
    readonly episodeSegment: number;
  }[];
  /**
   * The episode's trajectory segments (one unless a rewrite, reasoning strip or context management
   * split it), each trained; `endedBecause` says why the next one began (null for the last).
   */
  readonly episodeSegments: readonly {
    readonly start: number;
    readonly length: number;
    readonly endedBecause: string | null;
  }[];
  /** `[id, text, mask, logprob]` per token; logprob null on environment tokens. */
  readonly tokens: readonly (readonly [number, string, 0 | 1, number | null])[];
  /**
   * `report`: the last segment's audit; `segments`: each segment's, against the conversation it rendered
   * (hunk positions within that segment, which starts at `start`), null where the line does not record it.
   */
  readonly drift:
    | {
        readonly report: DriftReport;
        readonly toolsNote: string | null;
        readonly segments: readonly { readonly start: number; readonly report: DriftReport | null }[];
      }
    | { readonly error: string };
}

/** `/api/task`: every recorded episode of one task, training steps first, then evals. */
export interface TaskAnswer {
  readonly taskId: string;
  readonly episodes: readonly (EpisodeSummary & { readonly source: string })[];
}

/** `/api/tools`: how the agent used its tools over one source's episodes. */
export interface ToolUseStats {
  readonly episodes: number;
  readonly toolCalls: number;
  readonly callsPerEpisode: number;
  readonly tools: readonly ToolFigures[];
  /** Calls of tools the agent does not have, as one row; null when there were none. */
  readonly unknownTools:
    | (ToolFigures & {
        readonly names: number;
        readonly examples: readonly { readonly name: string; readonly calls: number }[];
      })
    | null;
  readonly errors: readonly { readonly kind: string; readonly count: number; readonly rate: number }[];
}

/** One tool's figures over a set of episodes. */
export interface ToolFigures {
  readonly name: string;
  readonly calls: number;
  /** Share of episodes that called it at least once. */
  readonly episodeShare: number;
  readonly errors: number;
}
