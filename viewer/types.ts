/**
 * The JSON the viewer's API answers, as the browser reads it. The server's types are in src/view
 * (run-index.ts RunRow, episode-query.ts, episode-tokens.ts, report/tool-use.ts); the browser test
 * drives both together, so a field renamed on one side fails there.
 */
export type RunStatus = 'running' | 'finished' | 'failed' | 'interrupted' | 'stale';

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
  readonly evalBefore: { readonly label: string; readonly accuracy: number | null } | null;
  readonly evalAfter: { readonly label: string; readonly accuracy: number | null } | null;
  readonly dataset: string | null;
  readonly engine: string | null;
}

export interface MetricsAnswer {
  readonly run: RunRow;
  readonly train: {
    readonly steps: readonly number[];
    readonly series: Readonly<Record<string, readonly (number | null)[]>>;
  };
  readonly evals: readonly (Readonly<Record<string, unknown>> & { readonly step?: number; readonly label?: string })[];
}

export interface SourceInfo {
  readonly id: string;
  readonly kind: 'train' | 'eval';
  readonly step: number;
}

export interface EpisodeSummary {
  readonly index: number;
  readonly step: number;
  readonly group: number;
  readonly sample: number;
  readonly taskId: string;
  readonly reward: number;
  readonly rewardParts: Readonly<Record<string, number>>;
  readonly success: boolean;
  readonly failed: boolean;
  readonly truncated: boolean;
  readonly finishReason: string;
  readonly turns: number;
  readonly toolCalls: number;
  readonly toolErrors: number;
  readonly generatedTokens: number;
  readonly promptTokens: number;
  readonly advantage: number | null;
  readonly answer: string;
}

export interface EpisodePage {
  readonly source: string;
  readonly total: number;
  readonly matched: number;
  readonly offset: number;
  readonly episodes: readonly EpisodeSummary[];
}

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

export interface DriftHunk {
  readonly trajectory: { readonly start: number; readonly end: number; readonly text: string };
  readonly rerendered: { readonly start: number; readonly end: number; readonly text: string };
  readonly modelTokens: number;
}

export interface DriftReport {
  readonly identical: boolean;
  readonly trajectoryTokens: number;
  readonly rerenderedTokens: number;
  readonly firstDivergence: number | null;
  readonly changedModelTokens: number;
  readonly hunkCount: number;
  readonly hunks: readonly DriftHunk[];
}

export interface EpisodeTokens {
  readonly length: number;
  readonly segments: readonly {
    readonly source: string;
    readonly start: number;
    readonly length: number;
    readonly turn: number;
    readonly policyVersion: number | null;
    readonly finishReason: string | null;
  }[];
  readonly tokens: readonly (readonly [number, string, 0 | 1, number | null])[];
  readonly drift: { readonly report: DriftReport; readonly toolsNote: string | null } | { readonly error: string };
}

export interface ToolFigures {
  readonly name: string;
  readonly calls: number;
  readonly episodeShare: number;
  readonly errors: number;
}

export interface ToolUseStats {
  readonly episodes: number;
  readonly toolCalls: number;
  readonly callsPerEpisode: number;
  readonly tools: readonly ToolFigures[];
  readonly unknownTools:
    | (ToolFigures & {
        readonly names: number;
        readonly examples: readonly { readonly name: string; readonly calls: number }[];
      })
    | null;
  readonly errors: readonly { readonly kind: string; readonly count: number; readonly rate: number }[];
}

export type ConversationPart =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'reasoning'; readonly text: string }
  | { readonly kind: 'toolCall'; readonly id: string; readonly name: string; readonly input: unknown }
  | {
      readonly kind: 'toolResult';
      readonly id: string;
      readonly name: string;
      readonly status: 'success' | 'error';
      readonly text: string;
    };

export interface ConversationTurn {
  readonly role: 'system' | 'user' | 'assistant' | 'tool';
  readonly parts: readonly ConversationPart[];
}

export interface EpisodeAnswer {
  readonly source: string;
  readonly record: EpisodeRecord;
  readonly turns: readonly ConversationTurn[];
}
