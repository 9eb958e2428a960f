// A perfect tau2 agent: the task's expected actions run through the episode's real tools, as the
// reward tests and bench/tau2.ts drive the evaluator.
import type { Tool } from '@strands-agents/sdk';
import type { Task } from '../datasets/types.js';
import { runStrandsTool } from '../domains/tau2/index.js';
import type { ToolCallRecord } from '../rewards/types.js';

/** What a perfect agent does and says: the calls of the task's evaluation criteria and the facts to communicate. */
export interface PerfectAgentTurns {
  readonly toolCalls: ToolCallRecord[];
  readonly communicateInfo: readonly string[];
}

/** Runs each expected action of `task` with the episode tool of that name, in order. */
export async function perfectToolCalls(task: Task, episodeTools: readonly Tool[]): Promise<PerfectAgentTurns> {
  const criteria = (
    task.data.tau2 as {
      evaluation_criteria: { actions: { name: string; arguments: unknown }[]; communicate_info: string[] };
    }
  ).evaluation_criteria;
  const toolCalls: ToolCallRecord[] = [];
  for (const action of criteria.actions) {
    const tool = episodeTools.find((t) => t.name === action.name)!;
    toolCalls.push({ name: tool.name, input: action.arguments, ...(await runStrandsTool(tool, action.arguments)) });
  }
  return { toolCalls, communicateInfo: criteria.communicate_info };
}
