import { pythonJson } from '../python-json.js';
import { bracketExtent } from './bracket-extent.js';
import { echo, malformed } from './call-result.js';
import { jsonCall, salvageName } from './json-call.js';
import { splitReasoning } from './reasoning.js';
import type { ParsedToolCall, ParsedTurn, ToolCallParser } from './types.js';

const MARKER = 'functools';
const ARGUMENT_KEYS = ['arguments', 'parameters'];

/**
 * Phi-4-mini's format (vLLM's `phi4_mini_json`): `functools[{"name": ..., "arguments": {...}}, ...]`, the
 * calls as one JSON list after the word `functools` (or `"parameters"` for the arguments). The list is read
 * to its matching `]`, so a value holding `]` stays whole (vLLM's pattern stops at the first `]`); an
 * unterminated list, a list that is not JSON, and an item that is no call are errors the model sees.
 */
export const phi4MiniParser: ToolCallParser = {
  format: 'phi4_mini_json',
  parse(text: string): ParsedTurn {
    const { reasoning, rest } = splitReasoning(text);
    const at = rest.indexOf(`${MARKER}[`);
    if (at < 0) return { reasoning, text: rest.trim(), calls: [] };
    const listAt = at + MARKER.length;
    const extent = bracketExtent(rest, listAt);
    const end = extent.end < 0 ? rest.length : extent.end;
    const raw = rest.slice(at, end);
    const outside = (rest.slice(0, at) + rest.slice(end)).trim();
    return { reasoning, text: outside, calls: readList(rest.slice(listAt, end), raw, extent.end >= 0) };
  },
  renderCalls: (calls) => `${MARKER}${pythonJson(calls.map((c) => ({ name: c.name, arguments: c.arguments })))}`,
};

function readList(list: string, raw: string, closed: boolean): ParsedToolCall[] {
  if (!closed)
    return [malformed('unterminated', raw, `the ${MARKER}[...] list of tool calls was not closed`, salvageName(raw))];
  let value: unknown;
  try {
    value = JSON.parse(list);
  } catch (error) {
    return [
      malformed(
        'bad_json',
        raw,
        `the ${MARKER}[...] list is not valid JSON (${echo((error as Error).message)})`,
        salvageName(raw),
      ),
    ];
  }
  if (!Array.isArray(value) || value.length === 0)
    return [malformed('bad_call', raw, `${MARKER}[...] must list at least one call {"name": ..., "arguments": {...}}`)];
  return value.map((item) => jsonCall(item, raw, ARGUMENT_KEYS, JSON.stringify(item)));
}
