import { pythonJson } from '../python-json.js';
import { bracketExtent } from './bracket-extent.js';
import { malformed } from './call-result.js';
import { parseJsonCall, salvageName } from './json-call.js';
import { splitReasoning } from './reasoning.js';
import type { ParsedToolCall, ParsedTurn, ToolCallParser } from './types.js';

const PYTHON_TAG = '<|python_tag|>';
/** Calls start after `<|python_tag|>`, or with a JSON object opening a line whose first key is "name". */
const CALLS_START = /<\|python_tag\|>|(?<=^|\n)[ \t]*(?=\{\s*"name"\s*:)/g;
const ARGUMENT_KEYS = ['parameters', 'arguments'];

/**
 * Llama 3.1/3.2/3.3 JSON format: `{"name": ..., "parameters": {...}}` (or `"arguments"`, one of them always
 * written), after an optional `<|python_tag|>`, several separated by `;` (vLLM's `llama3_json`). Unlike vLLM, which takes any JSON
 * object in the reply for a call, a call starts only at `<|python_tag|>` or with `{"name":` opening a line,
 * so JSON in a text answer stays text; after the tag, anything but a JSON call is an error the model sees.
 */
export const llama3JsonParser: ToolCallParser = {
  format: 'llama3_json',
  parse(text: string): ParsedTurn {
    const { reasoning, rest } = splitReasoning(text);
    const calls: ParsedToolCall[] = [];
    const kept: string[] = [];
    let from = 0;
    for (const match of rest.matchAll(CALLS_START)) {
      if (match.index < from) continue;
      kept.push(rest.slice(from, match.index));
      from = readCalls(rest, match.index, match.index + match[0].length, calls);
    }
    kept.push(rest.slice(from));
    return { reasoning, text: kept.join('').trim(), calls };
  },
  renderCalls: (calls) =>
    PYTHON_TAG + calls.map((c) => pythonJson({ name: c.name, parameters: c.arguments })).join('; '),
};

/** Reads the `;`-separated calls from `start` (the first one's raw begins at `tagAt`); returns where they end. */
function readCalls(text: string, tagAt: number, start: number, calls: ParsedToolCall[]): number {
  let callAt = tagAt;
  let at = skipSpace(text, start);
  for (;;) {
    if (text[at] !== '{') {
      const raw = text.slice(callAt, at) + text.slice(at).split('\n', 1)[0];
      calls.push(
        malformed(
          'bad_call',
          raw,
          'after <|python_tag|> a tool call must be a JSON object {"name": ..., "parameters": {...}}',
          salvageName(raw),
        ),
      );
      return callAt + raw.length;
    }
    const extent = bracketExtent(text, at);
    if (extent.end < 0) {
      const raw = text.slice(callAt);
      calls.push(malformed('unterminated', raw, 'the tool call JSON was not closed', salvageName(raw)));
      return text.length;
    }
    calls.push(parseJsonCall(text.slice(at, extent.end), text.slice(callAt, extent.end), ARGUMENT_KEYS, true));
    const next = skipSpace(text, extent.end);
    if (text[next] !== ';') return extent.end;
    at = skipSpace(text, next + 1);
    callAt = at;
    // A trailing `;` ends the list.
    if (at >= text.length) return at;
  }
}

function skipSpace(text: string, at: number): number {
  while (at < text.length && /\s/.test(text[at]!)) at++;
  return at;
}
