import { pythonJson } from '../python-json.js';
import { parseJsonCall, salvageName } from './json-call.js';
import { type ReasoningMarkers, splitReasoning, THINK } from './reasoning.js';
import { parseToolCallTags } from './call-section.js';
import type { ParsedTurn, ToolCallParser } from './types.js';

export { MAX_ARGUMENT_DEPTH } from './call-result.js';

const CALL_OPEN = '<tool_call>';
const CALL_CLOSE = '</tool_call>';
const REASONING: ReasoningMarkers = { ...THINK, call: { open: CALL_OPEN, close: CALL_CLOSE, isCall: isJson } };

/**
 * Hermes format (Qwen2.5, Qwen3): `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, any number
 * per turn, after an optional `<think>` block. Strict: no JSON repair, and an unterminated tag is an error
 * even when its JSON parses, so the model is told exactly what was wrong.
 */
export const hermesParser: ToolCallParser = {
  format: 'hermes',
  parse(text: string): ParsedTurn {
    const { reasoning, rest } = splitReasoning(text, REASONING);
    return { reasoning, ...parseToolCallTags(rest, parseJsonCall, salvageName) };
  },
  renderCalls: (calls) =>
    calls.map((c) => `${CALL_OPEN}\n${pythonJson({ name: c.name, arguments: c.arguments })}\n${CALL_CLOSE}`).join('\n'),
};

function isJson(body: string): boolean {
  try {
    JSON.parse(body);
    return true;
  } catch {
    return false;
  }
}
