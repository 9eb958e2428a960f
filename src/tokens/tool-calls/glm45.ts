import type { ChatTool } from '../chat-types.js';
import { pythonJson } from '../python-json.js';
import { echo, malformed, namedCall } from './call-result.js';
import { salvageName } from './json-call.js';
import { type ReasoningMarkers, splitReasoning, THINK } from './reasoning.js';
import { parseToolCallTags } from './call-section.js';
import { coerceArguments } from './schema-coerce.js';
import type { ParsedToolCall, ParsedTurn, ToolCallParseContext, ToolCallParser } from './types.js';

/** The name: the call's first line, up to a line break or its first `<arg_key>`. */
const NAME = /^\s*([^\s<]+)[ \t]*(?:\n|(?=<arg_key>)|$)/;
const ARGUMENT = /^\s*<arg_key>([\s\S]*?)<\/arg_key>\s*<arg_value>/;
const VALUE_CLOSE = '</arg_value>';
const REASONING: ReasoningMarkers = {
  ...THINK,
  call: { open: '<tool_call>', close: '</tool_call>', isCall: (body) => NAME.test(body) },
};

/**
 * GLM-4.5 / 4.6 / 4.7 format (vLLM's `glm45` and `glm47`, one parser): `<tool_call>NAME<arg_key>K</arg_key>
 * <arg_value>V</arg_value>...</tool_call>`, the name on its own line (GLM-4.5, 4.6) or straight before the first
 * `<arg_key>` (GLM-4.7). Keys are trimmed; values are taken as written, white space included, and converted by
 * their schema types as vLLM converts them (schema-coerce.ts): a string parameter keeps its text exactly.
 * Strict about the markup, as `hermes` is: text between arguments, an unclosed value or a repeated key is an
 * error the model sees.
 */
export const glm45Parser: ToolCallParser = {
  format: 'glm45',
  parse(text: string, context?: ToolCallParseContext): ParsedTurn {
    const { reasoning, rest } = splitReasoning(text, REASONING);
    const tools = context?.tools ?? [];
    return {
      reasoning,
      ...parseToolCallTags(
        rest,
        (body, raw) => parseCall(body, raw, tools),
        (body) => NAME.exec(body)?.[1],
      ),
    };
  },
  renderCalls: (calls) =>
    calls
      .map(
        (c) =>
          `<tool_call>${c.name}\n${Object.entries(c.arguments)
            .map(
              ([k, v]) =>
                `<arg_key>${k}</arg_key>\n<arg_value>${typeof v === 'string' ? v : pythonJson(v)}</arg_value>\n`,
            )
            .join('')}</tool_call>`,
      )
      .join('\n'),
};

function parseCall(body: string, raw: string, tools: readonly ChatTool[]): ParsedToolCall {
  const head = NAME.exec(body);
  if (!head)
    return malformed(
      'bad_call',
      raw,
      'a tool call must be NAME on its first line, then <arg_key>KEY</arg_key><arg_value>VALUE</arg_value> for each argument',
      salvageName(body),
    );
  const name = head[1]!;
  const entries: [string, string][] = [];
  let rest = body.slice(head[0].length);
  while (rest.trim() !== '') {
    const argument = ARGUMENT.exec(rest);
    if (!argument)
      return malformed(
        'bad_call',
        raw,
        `the call to '${echo(name)}' has text outside <arg_key>...</arg_key><arg_value>...</arg_value>: '${echo(rest.trim())}'`,
        name,
      );
    const key = argument[1]!.trim();
    const end = rest.indexOf(VALUE_CLOSE, argument[0].length);
    if (end < 0)
      return malformed(
        'unterminated',
        raw,
        `the value of '${echo(key)}' in the call to '${echo(name)}' was not closed with ${VALUE_CLOSE}`,
        name,
      );
    if (key === '' || entries.some(([k]) => k === key))
      return malformed(
        'bad_call',
        raw,
        `the call to '${echo(name)}' has an empty or repeated key '${echo(key)}'`,
        name,
      );
    entries.push([key, rest.slice(argument[0].length, end)]);
    rest = rest.slice(end + VALUE_CLOSE.length);
  }
  return namedCall(name, coerceArguments(entries, tools, name), raw);
}
