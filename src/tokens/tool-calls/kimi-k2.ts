import { pythonJson } from '../python-json.js';
import { parseSections, type SectionMarkers } from './call-section.js';
import { callWithJsonArguments, malformed } from './call-result.js';
import { splitReasoning } from './reasoning.js';
import type { ParsedToolCall, ParsedTurn, ToolCallParser } from './types.js';

const MARKERS: SectionMarkers = {
  sectionOpen: '<|tool_calls_section_begin|>',
  sectionClose: '<|tool_calls_section_end|>',
  callOpen: '<|tool_call_begin|>',
  callClose: '<|tool_call_end|>',
};
const ARGUMENTS = '<|tool_call_argument_begin|>';
/** A call id, `functions.NAME:INDEX`; the name is its last dotted part, as vLLM reads it. */
const CALL_ID = /^(?:[\w-]+\.)*([\w-]+):\d+$/;

/**
 * Kimi K2 format (vLLM's `kimi_k2`): calls in `<|tool_calls_section_begin|>…<|tool_calls_section_end|>`,
 * each `<|tool_call_begin|>functions.NAME:INDEX<|tool_call_argument_begin|>{...}<|tool_call_end|>`.
 */
export const kimiK2Parser: ToolCallParser = {
  format: 'kimi_k2',
  parse(text: string): ParsedTurn {
    const { reasoning, rest } = splitReasoning(text);
    return { reasoning, ...parseSections(rest, MARKERS, parseBody, (body) => idName(body.split(ARGUMENTS, 1)[0]!)) };
  },
  renderCalls: (calls) =>
    `${MARKERS.sectionOpen}${calls
      .map(
        (c, i) =>
          `${MARKERS.callOpen}functions.${c.name}:${i}${ARGUMENTS}${pythonJson(c.arguments)}${MARKERS.callClose}`,
      )
      .join('')}${MARKERS.sectionClose}`,
};

function parseBody(body: string, raw: string): ParsedToolCall {
  const at = body.indexOf(ARGUMENTS);
  const id = (at < 0 ? body : body.slice(0, at)).trim();
  const name = idName(id);
  if (at < 0 || name === undefined)
    return malformed('bad_call', raw, `a tool call must be functions.NAME:INDEX${ARGUMENTS}{arguments}`, name);
  return callWithJsonArguments(name, body.slice(at + ARGUMENTS.length), raw);
}

function idName(id: string): string | undefined {
  return CALL_ID.exec(id.trim())?.[1];
}
