import type { EpisodeSampling } from '../engines/types.js';

/**
 * How an episode's model requests are generated, the same for a Strands agent (TitoModel) and an
 * external agent served through the gateway: the recipe's agent.max_new_tokens, agent.max_total_tokens,
 * sampling and chat-template arguments.
 */
export interface GenerationSettings {
  /** Cap on one reply (agent.max_new_tokens). */
  readonly maxNewTokens: number;
  /** Cap on prompt + generated tokens of one trajectory; generation is clamped to the room left. */
  readonly maxTotalTokens?: number;
  /** Most tool calls one reply may make (agent.max_tool_calls_per_turn); the calls past it are not run. Default: no cap. */
  readonly maxToolCallsPerTurn?: number;
  readonly sampling: EpisodeSampling;
  readonly chatTemplateKwargs?: Readonly<Record<string, unknown>>;
}
