import { EpisodeDb, sameState } from './db.js';
import type { DomainSpec } from './domain.js';
import type { RewardBasisPart, Tau2Task } from './tasks.js';
import { callTool } from './tools/common.js';

/** How an episode ended; only the two stops are scored, anything else scores 0 as in the reference. */
export type Termination = 'user_stop' | 'agent_stop' | (string & {});

/** Judges a task's NL assertions against the episode's conversation (bound by the caller): one verdict per assertion, in order. */
export type NlJudge = (assertions: readonly string[]) => Promise<readonly NlVerdict[]>;

/** A judge's verdict on one NL assertion. */
export interface NlVerdict {
  readonly assertion: string;
  readonly met: boolean;
  readonly reasoning: string;
}

export interface TranscriptTurn {
  readonly role: 'user' | 'assistant';
  readonly text: string;
}

/** One tool call the agent made. */
export interface PredictedCall {
  readonly name: string;
  readonly input: unknown;
}

export interface EvaluationInput {
  readonly task: Tau2Task;
  readonly spec: DomainSpec;
  /** The episode's database after the agent's tool calls (the predicted state). */
  readonly db: EpisodeDb;
  readonly toolCalls: readonly PredictedCall[];
  /** The visible conversation (agent and user text, tool calls excluded). */
  readonly transcript: readonly TranscriptTurn[];
  readonly termination: Termination;
  /** `task`: the task's reward_basis; `judge_free`: [DB, COMMUNICATE] for RL without a judge. */
  readonly basis?: 'task' | 'judge_free';
  readonly judge?: NlJudge;
}

export interface Evaluation {
  readonly reward: number;
  /** 0/1 per basis component that was scored (ACTION may be fractional only with partial credit; here 0/1). */
  readonly parts: Readonly<Partial<Record<RewardBasisPart, number>>>;
  readonly basis: readonly RewardBasisPart[];
  /** Components of the task's basis that were left out (NL_ASSERTION without a judge). */
  readonly dropped: readonly RewardBasisPart[];
  readonly info: Readonly<Record<string, unknown>>;
}

/**
 * Score an episode as the reference's evaluator does: 0 unless it ended by a stop token; else
 * the product of the basis components — DB (predicted state equals the state the reference
 * actions produce on a fresh database), COMMUNICATE (each required string, lower-cased, in some
 * agent message with commas removed), ACTION (each reference action matched by a call with
 * equal arguments, or equal `compare_args`), ENV_ASSERTION and NL_ASSERTION (judge needed).
 */
export async function evaluateEpisode(input: EvaluationInput): Promise<Evaluation> {
  const criteria = input.task.evaluation_criteria;
  const taskBasis: RewardBasisPart[] =
    input.basis === 'judge_free' ? ['DB', 'COMMUNICATE'] : [...(criteria?.reward_basis ?? ['DB', 'COMMUNICATE'])];
  const dropped: RewardBasisPart[] = input.judge ? [] : taskBasis.filter((b) => b === 'NL_ASSERTION');
  const basis = taskBasis.filter((b) => !dropped.includes(b));
  if (input.termination !== 'user_stop' && input.termination !== 'agent_stop') {
    return {
      reward: 0,
      parts: {},
      basis,
      dropped,
      info: { note: `episode ended without a stop token: ${input.termination}` },
    };
  }
  if (!criteria) return { reward: 1, parts: {}, basis, dropped, info: { note: 'no evaluation criteria' } };
  const parts: Partial<Record<RewardBasisPart, number>> = {};
  const info: Record<string, unknown> = {};
  for (const part of basis) {
    if (part === 'DB') {
      const gold = goldState(input.task, input.spec, input.db);
      parts.DB = sameState(input.db, gold.db) ? 1 : 0;
      if (gold.failed.length > 0) info.gold_replay_failures = gold.failed;
    } else if (part === 'COMMUNICATE') {
      const missing = missingInfo(criteria.communicate_info ?? [], input.transcript);
      parts.COMMUNICATE = missing.length === 0 ? 1 : 0;
      if (missing.length > 0) info.communicate_missing = missing;
    } else if (part === 'ACTION') {
      const unmatched = (criteria.actions ?? [])
        .filter((a) => !input.toolCalls.some((c) => actionMatches(a, c)))
        .map((a) => a.action_id);
      parts.ACTION = unmatched.length === 0 ? 1 : 0;
      if (unmatched.length > 0) info.actions_unmatched = unmatched;
    } else if (part === 'ENV_ASSERTION') {
      const assertions = criteria.env_assertions ?? [];
      // airline and retail define no assertion functions; an assertion there cannot be met.
      parts.ENV_ASSERTION = assertions.length === 0 ? 1 : 0;
      if (assertions.length > 0) info.env_assertions_unsupported = assertions.map((a) => a.func_name);
    } else {
      const assertions = criteria.nl_assertions ?? [];
      // As in the reference, a task without assertions meets this part without asking the judge.
      const verdicts = assertions.length === 0 ? [] : await input.judge!(assertions);
      parts.NL_ASSERTION = verdicts.every((v) => v.met) ? 1 : 0;
      info.nl_verdicts = verdicts;
    }
  }
  const reward = basis.reduce((product, b) => product * (parts[b] ?? 1), 1);
  return { reward, parts, basis, dropped, info };
}

interface GoldState {
  readonly db: EpisodeDb;
  readonly failed: readonly string[];
}

const goldCache = new WeakMap<object, GoldState>();

/**
 * The state the task's reference actions produce on a fresh database (mutating actions only:
 * reads cannot change it). Failing actions are skipped as in the reference and reported.
 * Cached per task and base, since every episode of a task compares against the same state.
 */
export function goldState(task: Tau2Task, spec: DomainSpec, like: EpisodeDb): GoldState {
  const actions = task.evaluation_criteria?.actions ?? [];
  const key = actions as object;
  const cached = goldCache.get(key);
  if (cached && cached.db.base === like.base) return cached;
  const db = new EpisodeDb(like.model, like.base);
  const failed: string[] = [];
  for (const action of actions) {
    const tool = spec.tools.find((t) => t.name === action.name);
    if (tool && !tool.mutates) continue;
    const outcome = callTool(spec.tools, db, action.name, action.arguments);
    if (outcome.status === 'error') failed.push(`${action.action_id}: ${outcome.output}`);
  }
  const state = { db, failed };
  goldCache.set(key, state);
  return state;
}

/** The `communicate_info` strings no agent message contains (case-insensitive, commas removed from the message). */
export function missingInfo(required: readonly string[], transcript: readonly TranscriptTurn[]): string[] {
  const said = transcript
    .filter((t) => t.role === 'assistant' && t.text.length > 0)
    .map((t) => t.text.toLowerCase().replaceAll(',', ''));
  return required.filter((info) => !said.some((text) => text.includes(info.toLowerCase())));
}

/** The reference's `Action.compare_with_tool_call`: same name, equal arguments (all, or `compare_args`). */
export function actionMatches(
  action: { name: string; arguments: Record<string, unknown>; compare_args?: string[] | null },
  call: PredictedCall,
): boolean {
  if (action.name !== call.name) return false;
  const args = (typeof call.input === 'object' && call.input !== null ? call.input : {}) as Record<string, unknown>;
  const keys = action.compare_args ?? Object.keys(args);
  if (keys.length === 0) return true;
  return keys.every((k) => k in args === k in action.arguments && deepEqual(args[k], action.arguments[k]));
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return (
    ka.length === kb.length &&
    ka.every((k) => deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
  );
}
