import { AfterToolCallEvent, BeforeToolCallEvent, type Plugin } from '@strands-agents/sdk';
import { clipEcho } from '../util/clip.js';
import { toolResultText } from './chat-messages.js';
import type { EpisodeLedger, ToolErrorKind } from './episode-ledger.js';
import { checkJsonSchema } from './json-schema-check.js';

/**
 * Turns every unusable tool call into an error tool result the model sees, and counts it by kind:
 * calls the provider could not parse (bad_json, bad_call, unterminated), unknown tools, and arguments
 * that fail the tool's input schema. Records every call with its result for the reward.
 */
export function toolCallGuard(ledger: EpisodeLedger): Plugin {
  const rejected = new Set<string>();
  return {
    name: 'atk:tool-call-guard',
    initAgent(agent) {
      agent.addHook(BeforeToolCallEvent, (event) => {
        const { name, toolUseId, input } = event.toolUse;
        const problem =
          ledger.rejectedCalls.get(toolUseId) ??
          validate(name, input, event.tool?.toolSpec.inputSchema, event.tool !== undefined, ledger.toolNames);
        if (!problem) return;
        rejected.add(toolUseId);
        ledger.countToolError(problem.kind);
        event.cancel = `Error: ${problem.message}`;
      });
      agent.addHook(AfterToolCallEvent, (event) => {
        const { name, toolUseId, input } = event.toolUse;
        if (event.result.status === 'error' && !rejected.has(toolUseId)) ledger.countToolError('tool_failed');
        ledger.countToolCall(name, event.result.status);
        ledger.toolCalls.push({ name, input, status: event.result.status, output: toolResultText(event.result) });
        ledger.toolCalls.push(...(ledger.answeredBy.get(toolUseId) ?? []));
      });
    },
  };
}

function validate(
  name: string,
  input: unknown,
  schema: unknown,
  known: boolean,
  toolNames: readonly string[],
): { kind: ToolErrorKind; message: string } | undefined {
  if (!known)
    return {
      kind: 'unknown_tool',
      message: `unknown tool '${clipEcho(name)}'; available tools: ${toolNames.join(', ') || '(none)'}`,
    };
  const problem = checkJsonSchema(input, schema);
  return problem
    ? { kind: 'bad_arguments', message: `invalid arguments for '${clipEcho(name)}': ${clipEcho(problem)}` }
    : undefined;
}
