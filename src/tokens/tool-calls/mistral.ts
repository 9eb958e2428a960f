import { pythonJson } from '../python-json.js';
import { bracketExtent } from './bracket-extent.js';
import { callWithJsonArguments, echo, malformed } from './call-result.js';
import { jsonCall, parseJsonCall, salvageName } from './json-call.js';
import { type ReasoningMarkers, splitReasoning } from './reasoning.js';
import type { ParsedToolCall, ParsedTurn, ToolCallParser } from './types.js';

const TOOL_CALLS = '[TOOL_CALLS]';
/** The newer form's head: a name, an optional `[CALL_ID]id`, then `[ARGS]` (or the arguments right away, v11). */
const NAMED = /^([A-Za-z0-9_.-]+)(?:\[CALL_ID\][A-Za-z0-9]*)?(\[ARGS\])?\s*/;
/** Magistral's reasoning block. */
const REASONING: ReasoningMarkers = { open: '[THINK]', close: '[/THINK]' };

/**
 * Mistral format (vLLM's `mistral`): `[TOOL_CALLS]` then a JSON list of `{"name", "arguments"}` (Mistral
 * 7B v0.3, Mistral Nemo/Small), or the newer `[TOOL_CALLS]name[ARGS]{...}` (Devstral, Magistral, Mistral
 * Small 3.2), one marker per call; `[TOOL_CALLS]name{...}` (tokenizer v11) is read too. Text before the
 * first marker and after the calls is text; anything after a marker that is not a call is an error.
 */
export const mistralParser: ToolCallParser = {
  format: 'mistral',
  parse(text: string): ParsedTurn {
    const { reasoning, rest } = splitReasoning(text, REASONING);
    const calls: ParsedToolCall[] = [];
    const kept: string[] = [];
    let from = 0;
    for (let marker = rest.indexOf(TOOL_CALLS); marker >= 0; marker = rest.indexOf(TOOL_CALLS, from)) {
      kept.push(rest.slice(from, marker));
      from = readCall(rest, marker, calls);
    }
    kept.push(rest.slice(from));
    return { reasoning, text: kept.join('').trim(), calls };
  },
  renderCalls: (calls) => calls.map((c) => `${TOOL_CALLS}${c.name}[ARGS]${pythonJson(c.arguments)}`).join(''),
};

/** Reads what follows the marker at `marker` into `calls`; returns where it ends. */
function readCall(text: string, marker: number, calls: ParsedToolCall[]): number {
  let at = marker + TOOL_CALLS.length;
  while (/\s/.test(text[at] ?? '')) at++;
  if (text[at] === '[') {
    const extent = bracketExtent(text, at);
    if (extent.end < 0) return unterminated(text, marker, calls);
    const raw = text.slice(marker, extent.end);
    let list: unknown;
    try {
      list = JSON.parse(text.slice(at, extent.end));
    } catch {
      // Read again for its error message and the name it may still show.
      calls.push(parseJsonCall(text.slice(at, extent.end), raw));
      return extent.end;
    }
    if (!Array.isArray(list) || list.length === 0)
      calls.push(malformed('bad_call', raw, 'after [TOOL_CALLS] the list must hold at least one call'));
    // Each call of the list is answered on its own; `raw` is the whole list, written as one piece.
    else for (const item of list) calls.push(jsonCall(item, raw, ['arguments'], JSON.stringify(item)));
    return extent.end;
  }
  const head = NAMED.exec(text.slice(at));
  const argumentsAt = at + (head?.[0].length ?? 0);
  // The reply ends inside the call's head (`[TOOL_CALLS]na`, `[TOOL_CALLS]name[ARGS`): cut off by its length limit.
  if (/^[A-Za-z0-9_.-]*(?:\[[A-Z_]*\]?[A-Za-z0-9]*)?\s*$/.test(text.slice(at)) && text.slice(at).trim() !== '')
    return unterminated(text, marker, calls, head?.[1], 'the tool call ended before its [ARGS]{...}');
  if (!head || text[argumentsAt] !== '{') {
    const raw = text.slice(marker, argumentsAt) + text.slice(argumentsAt).split('\n', 1)[0];
    calls.push(
      malformed(
        'bad_call',
        raw,
        `after [TOOL_CALLS] a tool call must be NAME[ARGS]{...} or a JSON list of calls; found '${echo(raw.slice(TOOL_CALLS.length))}'`,
        // A word before anything else is no name the model meant; one before [ARGS] is.
        head?.[2] ? head[1] : undefined,
      ),
    );
    return marker + raw.length;
  }
  const extent = bracketExtent(text, argumentsAt);
  if (extent.end < 0) return unterminated(text, marker, calls, head[1]);
  const raw = text.slice(marker, extent.end);
  const name = head[1]!;
  calls.push(callWithJsonArguments(name, text.slice(argumentsAt, extent.end), raw));
  return extent.end;
}

function unterminated(
  text: string,
  marker: number,
  calls: ParsedToolCall[],
  name?: string,
  message = 'the tool call JSON was not closed',
): number {
  const raw = text.slice(marker);
  calls.push(malformed('unterminated', raw, message, name ?? salvageName(raw)));
  return text.length;
}
