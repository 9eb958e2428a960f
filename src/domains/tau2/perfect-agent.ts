import { EpisodeDb, sameState } from './db.js';
import type { DomainSpec } from './domain.js';
import type { PredictedCall, Termination, TranscriptTurn } from './evaluator.js';
import { AGENT_GREETING } from './prompts.js';
import type { Tau2Action, Tau2Task } from './tasks.js';
import { callTool, type ToolOutcome } from './tools/common.js';

/** What a scripted episode produced, in the evaluator's terms. */
export interface ScriptedEpisode {
  readonly toolCalls: readonly (PredictedCall & ToolOutcome)[];
  readonly transcript: readonly TranscriptTurn[];
  readonly termination: Termination;
}

export interface PerfectAgentOptions {
  /** Change one argument of the write action at this index of the task's actions. */
  readonly corruptAction?: number;
  /** Leave out the message carrying `communicate_info`. */
  readonly skipMessage?: boolean;
}

/**
 * The "perfect agent": replays the task's reference actions through the real tools on the
 * episode's database and tells the user every required `communicate_info`, then the user stops.
 * It proves the tools and the evaluator agree with the reference (every task must score 1), and
 * with a corrupted argument or a skipped message that they catch a wrong episode (score 0).
 */
export function runPerfectAgent(
  task: Tau2Task,
  spec: DomainSpec,
  db: EpisodeDb,
  options: PerfectAgentOptions = {},
): ScriptedEpisode {
  const actions = task.evaluation_criteria?.actions ?? [];
  const toolCalls = actions.map((action, i) => {
    const input = i === options.corruptAction ? corruptArguments(action) : action.arguments;
    return { name: action.name, input, ...callTool(spec.tools, db, action.name, input) };
  });
  const info = task.evaluation_criteria?.communicate_info ?? [];
  const transcript: TranscriptTurn[] = [
    { role: 'assistant', text: AGENT_GREETING },
    { role: 'user', text: 'I need help with my booking.' },
  ];
  if (!options.skipMessage && info.length > 0)
    transcript.push({ role: 'assistant', text: `Here is what you asked about: ${info.join('; ')}.` });
  transcript.push({ role: 'user', text: 'Thanks, that is all. ###STOP###' });
  return { toolCalls, transcript, termination: 'user_stop' };
}

/**
 * Index of the first reference action that changes the database state, or -1. Some reference
 * actions fail in the reference too, and some write what is already there; corrupting one of
 * those changes nothing, so the corruption check needs this one.
 */
export function firstEffectiveWrite(task: Tau2Task, spec: DomainSpec, like: EpisodeDb): number {
  const actions = task.evaluation_criteria?.actions ?? [];
  const after = new EpisodeDb(like.model, like.base);
  const before = new EpisodeDb(like.model, like.base);
  for (const [i, action] of actions.entries()) {
    callTool(spec.tools, after, action.name, action.arguments);
    if (!sameState(before, after)) return i;
    callTool(spec.tools, before, action.name, action.arguments);
  }
  return -1;
}

/** The action's arguments with its first string (or first number) argument changed. */
export function corruptArguments(action: Tau2Action): Record<string, unknown> {
  const args = structuredClone(action.arguments);
  const key =
    Object.keys(args).find((k) => typeof args[k] === 'string') ??
    Object.keys(args).find((k) => typeof args[k] === 'number');
  if (key === undefined) return { ...args, __corrupted: true };
  args[key] = typeof args[key] === 'string' ? `${args[key] as string}X` : (args[key] as number) + 1;
  return args;
}
