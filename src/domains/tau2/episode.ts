import type { EpisodeDb } from './db.js';
import type { Termination, TranscriptTurn } from './evaluator.js';
import { isStopMessage } from './user-simulator.js';

/** `EpisodeEnv.state` key of the episode's database (set by the `tau2` tools, read by the `tau2` reward). */
export const TAU2_DB_KEY = 'tau2.db';
/** `EpisodeEnv.state` key an episode runner may set to say how the episode ended (a {@link Termination}). */
export const TAU2_TERMINATION_KEY = 'tau2.termination';

/** The episode's database from its state. @throws Error when the tau2 tools did not create one. */
export function episodeDb(state: ReadonlyMap<string, unknown>): EpisodeDb {
  const db = state.get(TAU2_DB_KEY);
  if (db === undefined)
    throw new Error("no tau2 database in the episode state: the recipe's tools must include {name: tau2}");
  return db as EpisodeDb;
}

/**
 * The visible conversation from episode messages, in either the Strands JSON form
 * (`{role, content: [{text} | {toolUse} | {toolResult}]}`) or the chat form (`{role, content: string}`).
 * Tool-call markup and `<think>` blocks are removed from agent text; tool results are skipped.
 */
export function transcriptOf(messages: readonly unknown[]): TranscriptTurn[] {
  const turns: TranscriptTurn[] = [];
  for (const message of messages) {
    if (typeof message !== 'object' || message === null) continue;
    const { role, content } = message as { role?: unknown; content?: unknown };
    if (role !== 'user' && role !== 'assistant') continue;
    const raw = typeof content === 'string' ? content : Array.isArray(content) ? content.map(blockText).join('') : '';
    const text = raw
      .replace(/<think>[\s\S]*?<\/think>/g, '')
      .replace(/<tool_call>[\s\S]*?<\/tool_call>/g, '')
      .trim();
    const onlyToolResults =
      Array.isArray(content) &&
      content.length > 0 &&
      content.every((b) => typeof b === 'object' && b !== null && 'toolResult' in b);
    if (!onlyToolResults) turns.push({ role, text });
  }
  return turns;
}

function blockText(block: unknown): string {
  if (typeof block !== 'object' || block === null) return '';
  const text = (block as { text?: unknown }).text;
  return typeof text === 'string' ? text : '';
}

/**
 * How the episode ended: the runner's explicit verdict when it set one, else a stop token in the
 * last message that has text (user: user_stop, agent: agent_stop), else the runner's finish reason.
 */
export function terminationOf(
  state: ReadonlyMap<string, unknown>,
  transcript: readonly TranscriptTurn[],
  finishReason: string,
): Termination {
  const explicit = state.get(TAU2_TERMINATION_KEY);
  if (typeof explicit === 'string') return explicit;
  const last = [...transcript].reverse().find((t) => t.text.length > 0);
  if (last && isStopMessage(last.text)) return last.role === 'user' ? 'user_stop' : 'agent_stop';
  return finishReason;
}
