import type { Task } from '../datasets/types.js';
import type { EpisodeEnv } from '../tools/types.js';
import type { ComponentOptionsSchema } from '../util/component-options.js';

/** One tool call the agent made, with what it got back. */
export interface ToolCallRecord {
  readonly name: string;
  readonly input: unknown;
  readonly status: 'success' | 'error';
  readonly output: string;
}

/** A finished episode, as a reward sees it. */
export interface EpisodeOutcome {
  readonly task: Task;
  /** Text of the last assistant message (tool-call markup removed). */
  readonly finalText: string;
  /** The conversation as plain JSON (role + content blocks). */
  readonly messages: readonly unknown[];
  readonly toolCalls: readonly ToolCallRecord[];
  /** Why the episode ended: endTurn, truncated, limitTurns, timeout, error, ... */
  readonly finishReason: string;
  readonly env: EpisodeEnv;
}

/** A score, or a score with named parts (each part is logged). */
export type RewardResult =
  | number
  | {
      readonly score: number;
      readonly parts?: Readonly<Record<string, number>>;
      readonly info?: Readonly<Record<string, unknown>>;
    };

export type RewardFn = (outcome: EpisodeOutcome) => Promise<RewardResult>;

export interface RewardRunContext {
  readonly recipeDir: string;
  warn(message: string): void;
}

/** A registered reward. */
export interface RewardDefinition extends ComponentOptionsSchema {
  readonly name: string;
  /** Build once per run. @throws ConfigError on bad options. */
  create(options: Readonly<Record<string, unknown>>, ctx: RewardRunContext): Promise<RewardFn>;
}
