import type { ChatMessage } from '../tokens/chat-types.js';

/** A malformed call of a reply whose other calls went back as tool calls; the model sees it answered with an error. */
export interface RejectedCall {
  /** Position among the reply's calls, well-formed ones included. */
  readonly index: number;
  readonly id: string;
  /** The parser's one-line reason. */
  readonly message: string;
}

/**
 * The messages the model sees after a reply that had rejected calls: the agent answered only the
 * well-formed calls, so each rejected one gets the error result the built-in agent's tool-call guard
 * gives (`Error: <reason>`), in call order among the agent's tool results. Without rejected calls the
 * agent's messages are returned as they are.
 */
export function withRejectedResults(added: readonly ChatMessage[], rejected: readonly RejectedCall[]): ChatMessage[] {
  if (rejected.length === 0) return [...added];
  const results = added.findIndex((m) => m.role !== 'tool');
  const agentResults = added.slice(0, results < 0 ? added.length : results);
  const rest = results < 0 ? [] : added.slice(results);
  const calls = agentResults.length + rejected.length;
  const merged: ChatMessage[] = [];
  let next = 0;
  for (let index = 0; index < calls; index++) {
    const error = rejected.find((r) => r.index === index);
    if (error) merged.push({ role: 'tool', content: `Error: ${error.message}`, tool_call_id: error.id });
    else if (next < agentResults.length) merged.push(agentResults[next++]!);
  }
  return [...merged, ...agentResults.slice(next), ...rest];
}
