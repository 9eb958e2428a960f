import type { ToolCallRecord } from '../rewards/types.js';
import type { ChatMessage } from '../tokens/chat-types.js';
import { TokenTrajectory } from '../tokens/trajectory.js';
import type { ParsedToolCall, ToolCallErrorKind } from '../tokens/tool-calls/types.js';

/**
 * Error kinds counted per episode: the parse/validation kinds, a tool that ran and failed, and a call
 * past agent.max_tool_calls_per_turn (not run).
 */
export type ToolErrorKind = ToolCallErrorKind | 'tool_failed' | 'too_many_calls';

/** Why a call the model wrote is answered with an error instead of run. */
export interface CallProblem {
  readonly kind: ToolErrorKind;
  readonly message: string;
  /**
   * Counted, but answered by the result of an earlier call of the reply (the first past the per-turn cap
   * answers for every call after it), so it gets no result of its own.
   */
  readonly answeredAbove?: true;
}

/**
 * The problem of each call of a reply, undefined for one that may run: its parse error when malformed; past
 * agent.max_tool_calls_per_turn (`cap`), whatever it was, one error result for all of them (on the first past
 * the cap) and none for each of the others, so a reply of hundreds of calls adds one short result to the next
 * prompt instead of one per call. The built-in agent and the gateway answer both the same way.
 */
export function callProblems(calls: readonly ParsedToolCall[], cap: number): (CallProblem | undefined)[] {
  const over = Math.max(0, calls.length - cap);
  const message =
    over === 1
      ? `this call was not run: at most ${cap} tool calls per turn (agent.max_tool_calls_per_turn)`
      : `this call and the ${over - 1} after it were not run: at most ${cap} tool calls per turn (agent.max_tool_calls_per_turn)`;
  return calls.map((call, index) => {
    if (index === cap) return { kind: 'too_many_calls', message };
    if (index > cap) return { kind: 'too_many_calls', message, answeredAbove: true };
    return call.ok ? undefined : { kind: call.kind, message: call.message };
  });
}

/**
 * Everything one episode records besides the Strands messages: the token trajectory, tool calls and
 * their errors by kind, timings. Shared by the episode's model provider and its tool-call guard.
 */
export class EpisodeLedger {
  /** The segment the episode is in; earlier ones are in `priorSegments`. */
  trajectory = new TokenTrajectory();
  /**
   * Earlier trajectory segments, in order, each with why the one after it starts from a whole render
   * (`reasoning_history`, `sliding_window`, `summarize`). Every segment is trained with the episode's advantage.
   */
  readonly priorSegments: {
    readonly trajectory: TokenTrajectory;
    readonly endedBecause: string;
    /** The built-in agent: the conversation the segment rendered, up to its last reply (what its drift audit re-renders). */
    readonly messages?: readonly ChatMessage[];
  }[] = [];
  /**
   * The built-in agent: the conversation the current segment renders (without the reply of its last
   * turn while `replyPending`); a new segment's drift audit needs it, since it is not the whole episode's.
   */
  conversation: readonly ChatMessage[] = [];
  /** The current segment's last generated reply is not yet in `conversation`. */
  replyPending = false;
  /** Prompt tokens context management left out of a new segment (the old prompt's length minus the new one's). */
  contextDroppedTokens = 0;
  /** Model turns that wrote a summary for agent.context (counted in the turns, but no message of the conversation). */
  summaryTurns = 0;
  readonly toolCalls: ToolCallRecord[] = [];
  readonly toolErrorsByKind: Partial<Record<ToolErrorKind, number>> = {};
  /** Calls of each of the agent's tools (calls naming no tool it has are counted by kind only). */
  readonly toolCallsByTool: Record<string, number> = {};
  /** Error results of each of the agent's tools, whatever the kind. */
  readonly toolErrorsByTool: Record<string, number> = {};
  /** Calls the provider could not parse or will not run (past the per-turn cap), by toolUseId: the guard turns them into error results. */
  readonly rejectedCalls = new Map<string, { kind: ToolErrorKind; message: string }>();
  /** Calls past the per-turn cap, recorded after the call whose error result answers for them (by its toolUseId). */
  readonly answeredBy = new Map<string, ToolCallRecord[]>();
  /** Tool names the agent has, for "unknown tool" messages. */
  toolNames: readonly string[] = [];
  /** Set when the provider itself ended the episode without a model call (e.g. maxTotalTokens). */
  stopReason: string | undefined;
  engineMs = 0;
  promptTokens = 0;
  generatedTokens = 0;

  /**
   * Ends the current segment; `next` (its first turn rendered the whole prompt) continues the episode.
   * `next` starts with the episode's counters so far, so the current segment's always hold the
   * episode's totals (the limits and the episode's stats read them).
   */
  startSegment(reason: string, next: TokenTrajectory, messages?: readonly ChatMessage[]): void {
    this.priorSegments.push({ trajectory: this.trajectory, endedBecause: reason, ...(messages ? { messages } : {}) });
    this.trajectory = next;
  }

  /** Counts one error tool result of `kind`. */
  countToolError(kind: ToolErrorKind): void {
    this.toolErrorsByKind[kind] = (this.toolErrorsByKind[kind] ?? 0) + 1;
    this.trajectory.counters.toolErrors++;
  }

  /** Counts one finished call of `name`, and its error result, when the agent has a tool of that name. */
  countToolCall(name: string, status: 'success' | 'error'): void {
    this.trajectory.counters.toolCalls++;
    if (!this.toolNames.includes(name)) return;
    this.toolCallsByTool[name] = (this.toolCallsByTool[name] ?? 0) + 1;
    if (status === 'error') this.toolErrorsByTool[name] = (this.toolErrorsByTool[name] ?? 0) + 1;
  }
}
