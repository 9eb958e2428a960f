import { pythonJson } from '../python-json.js';
import { parseToolCallTags } from './call-section.js';
import { malformed } from './call-result.js';
import { jsonCall, parseJsonCall, salvageName } from './json-call.js';
import { type ReasoningMarkers, splitReasoning, THINK } from './reasoning.js';
import type { ParsedToolCall, ParsedTurn, ToolCallParser } from './types.js';

const CALL_OPEN = '<tool_call>';
const CALL_CLOSE = '</tool_call>';
const REASONING: ReasoningMarkers = { ...THINK, call: { open: CALL_OPEN, close: CALL_CLOSE, isCall: isJsonList } };

/**
 * SmolLM2's format, which atk's `chatml-tools` template asks for: one `<tool_call>` holding a JSON list of
 * `{"name": ..., "arguments": {...}}` objects, `<tool_call>[{"name": "f", "arguments": {"a": 1}}]</tool_call>`
 * (as SmolLM2-Instruct was tuned to answer a tool list in its system turn). Every call of a list shares
 * the whole tag as its raw text. Strict as Hermes: the body must be a non-empty JSON list (a lone object
 * is refused, so the model is told the format), no JSON repair, and a tag left open is unterminated.
 */
export const smollm2Parser: ToolCallParser = {
  format: 'smollm2',
  parse(text: string): ParsedTurn {
    const { reasoning, rest } = splitReasoning(text, REASONING);
    return { reasoning, ...parseToolCallTags(rest, parseList, salvageName) };
  },
  renderCalls: (calls) =>
    `${CALL_OPEN}[${calls.map((c) => pythonJson({ name: c.name, arguments: c.arguments })).join(', ')}]${CALL_CLOSE}`,
};

/** The calls of one tag's body: each element of its JSON list read as a call object. */
function parseList(body: string, raw: string): ParsedToolCall[] {
  let list: unknown;
  try {
    list = JSON.parse(body);
  } catch {
    // Read again for its error message and the name it may still show.
    return [parseJsonCall(body, raw)];
  }
  if (!Array.isArray(list) || list.length === 0)
    return [
      malformed(
        'bad_call',
        raw,
        'inside <tool_call> the calls must be a JSON list: [{"name": ..., "arguments": {...}}, ...]',
        salvageName(body),
      ),
    ];
  return list.map((item) => jsonCall(item, raw, ['arguments'], JSON.stringify(item)));
}

function isJsonList(body: string): boolean {
  try {
    return Array.isArray(JSON.parse(body));
  } catch {
    return false;
  }
}
