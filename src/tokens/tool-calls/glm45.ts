import type { ChatTool } from '../chat-types.js';
import { pythonJson } from '../python-json.js';
import { echo, malformed, namedCall } from './call-result.js';
import { salvageName } from './json-call.js';
import { parsePythonLiteral } from './python-literal.js';
import { type ReasoningMarkers, splitReasoning, THINK } from './reasoning.js';
import { parseToolCallTags } from './call-section.js';
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
 * GLM-4.5 / GLM-4.6 format (vLLM's `glm45`): `<tool_call>NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>
 * ...</tool_call>`. Values are trimmed; a parameter whose schema type is string keeps its text, any other
 * is read as JSON, else as a Python literal, else kept as text (vLLM's order), so a value that fits no
 * type is rejected by the schema check. Strict about the markup, as `hermes` is.
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
  const properties = tools.find((t) => t.function.name === name)?.function.parameters.properties as
    | Record<string, { type?: unknown } | undefined>
    | undefined;
  const entries: [string, unknown][] = [];
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
    const value = rest.slice(argument[0].length, end).trim();
    entries.push([key, properties?.[key]?.type === 'string' ? value : deserialize(value)]);
    rest = rest.slice(end + VALUE_CLOSE.length);
  }
  // fromEntries defines own properties, so a key named "__proto__" stays a key.
  return namedCall(name, Object.fromEntries(entries), raw);
}

function deserialize(value: string): unknown {
  try {
    return JSON.parse(value) as unknown;
  } catch {
    try {
      return parsePythonLiteral(value);
    } catch {
      return value;
    }
  }
}
