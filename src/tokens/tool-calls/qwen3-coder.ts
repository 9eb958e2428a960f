import type { ChatTool } from '../chat-types.js';
import { pythonJson } from '../python-json.js';
import { echo, malformed, namedCall } from './call-result.js';
import { salvageName } from './json-call.js';
import { parsePythonLiteral } from './python-literal.js';
import { type ReasoningMarkers, splitReasoning, THINK } from './reasoning.js';
import { parseToolCallTags } from './call-section.js';
import type { ParsedToolCall, ParsedTurn, ToolCallParseContext, ToolCallParser } from './types.js';

const FUNCTION = /^\s*<function=([^>\n]*)>/;
const FUNCTION_CLOSE = '</function>';
const PARAMETER = /^\s*<parameter=([^>\n]*)>/;
const PARAMETER_CLOSE = '</parameter>';
const REASONING: ReasoningMarkers = {
  ...THINK,
  call: { open: '<tool_call>', close: '</tool_call>', isCall: (body) => FUNCTION.test(body) },
};

/**
 * Qwen3-Coder's XML format (also Qwen3.5-style models):
 * `<tool_call><function=NAME><parameter=P>value</parameter>...</function></tool_call>`. Values are text,
 * converted by the parameter's type in the tool's JSON schema as vLLM's `qwen3_coder` parser does (one
 * leading and one trailing line break of a value dropped; `null` is null; integers, numbers, booleans;
 * objects and arrays as JSON or a Python literal). Where vLLM falls back, this keeps the text, so a value
 * that does not convert (`"maybe"` for a boolean) is rejected by the schema check and the model told.
 * Strict about the markup: an unclosed tag or text between parameters is an error the model sees.
 */
export const qwen3CoderParser: ToolCallParser = {
  format: 'qwen3_coder',
  parse(text: string, context?: ToolCallParseContext): ParsedTurn {
    const { reasoning, rest } = splitReasoning(text, REASONING);
    const tools = context?.tools ?? [];
    return { reasoning, ...parseToolCallTags(rest, (body, raw) => parseCall(body, raw, tools), functionName) };
  },
  renderCalls: (calls) =>
    calls
      .map((c) => {
        const parameters = Object.entries(c.arguments).map(
          ([k, v]) => `<parameter=${k}>\n${typeof v === 'string' ? v : pythonJson(v)}\n${PARAMETER_CLOSE}\n`,
        );
        return `<tool_call>\n<function=${c.name}>\n${parameters.join('')}${FUNCTION_CLOSE}\n</tool_call>`;
      })
      .join('\n'),
};

function parseCall(body: string, raw: string, tools: readonly ChatTool[]): ParsedToolCall {
  const head = FUNCTION.exec(body);
  const name = head?.[1]?.trim() ?? '';
  if (!head || name === '')
    return malformed(
      'bad_call',
      raw,
      'a tool call must be <function=NAME> with <parameter=NAME>value</parameter> for each argument, then </function>',
      salvageName(body),
    );
  const close = body.lastIndexOf(FUNCTION_CLOSE);
  if (close < head[0].length)
    return malformed('unterminated', raw, `the call to '${echo(name)}' was not closed with </function>`, name);
  if (body.slice(close + FUNCTION_CLOSE.length).trim() !== '')
    return malformed('bad_call', raw, `text after </function> in the call to '${echo(name)}'`, name);
  const types = parameterTypes(tools, name);
  const entries: [string, unknown][] = [];
  let rest = body.slice(head[0].length, close);
  while (rest.trim() !== '') {
    const parameter = PARAMETER.exec(rest);
    if (!parameter)
      return malformed(
        'bad_call',
        raw,
        `the call to '${echo(name)}' has text outside <parameter=NAME>...</parameter>: '${echo(rest.trim())}'`,
        name,
      );
    const key = parameter[1]!.trim();
    const end = rest.indexOf(PARAMETER_CLOSE, parameter[0].length);
    if (end < 0)
      return malformed(
        'unterminated',
        raw,
        `the parameter '${echo(key)}' of the call to '${echo(name)}' was not closed with </parameter>`,
        name,
      );
    if (key === '' || entries.some(([k]) => k === key))
      return malformed(
        'bad_call',
        raw,
        `the call to '${echo(name)}' has an unnamed or repeated parameter '${echo(key)}'`,
        name,
      );
    const value = rest.slice(parameter[0].length, end).replace(/^\n/, '').replace(/\n$/, '');
    entries.push([key, convert(value, types?.[key])]);
    rest = rest.slice(end + PARAMETER_CLOSE.length);
  }
  // fromEntries defines own properties, so a parameter named "__proto__" stays a key.
  return namedCall(name, Object.fromEntries(entries), raw);
}

/** The parameters' schema types of the tool `name` (the `properties`, or the parameters object itself, as vLLM reads it). */
function parameterTypes(tools: readonly ChatTool[], name: string): Readonly<Record<string, string>> | undefined {
  const parameters = tools.find((t) => t.function.name === name)?.function.parameters;
  if (!parameters) return undefined;
  const properties = (typeof parameters.properties === 'object' && parameters.properties) || parameters;
  return Object.fromEntries(
    Object.entries(properties as Record<string, unknown>).map(([key, schema]) => [key, schemaType(schema)]),
  );
}

/** A property's type, lower-cased; of a union (`["integer", "null"]`, `anyOf`) the first that is not null; else string. */
function schemaType(schema: unknown): string {
  if (typeof schema !== 'object' || schema === null) return 'string';
  const { type, anyOf, oneOf } = schema as { type?: unknown; anyOf?: unknown; oneOf?: unknown };
  const options = Array.isArray(type) ? type : type !== undefined ? [type] : [];
  for (const option of options)
    if (String(option).trim().toLowerCase() !== 'null') return String(option).trim().toLowerCase();
  const union = Array.isArray(anyOf) ? anyOf : Array.isArray(oneOf) ? oneOf : [];
  for (const member of union) {
    const memberType = schemaType(member);
    if (memberType !== 'null' && (member as { type?: unknown }).type !== undefined) return memberType;
  }
  return 'string';
}

const STRING_TYPES = new Set(['string', 'str', 'text', 'varchar', 'char', 'enum']);
const INTEGER = /^\s*[+-]?\d(?:_?\d)*\s*$/;
const FLOAT = /^\s*[+-]?(?:\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d(?:_?\d)*)?\s*$/;

/** A parameter's text as its schema type (vLLM's `_convert_param_value`), or the text itself where it does not convert. */
function convert(value: string, type: string | undefined): unknown {
  if (value.toLowerCase() === 'null') return null;
  if (type === undefined || STRING_TYPES.has(type)) return value;
  if (/^(int|uint|long|short|unsigned)/.test(type))
    return INTEGER.test(value) ? Number(value.replace(/_/g, '')) : value;
  if (/^(num|float)/.test(type)) return FLOAT.test(value) ? Number(value.replace(/_/g, '')) : value;
  if (type === 'boolean' || type === 'bool' || type === 'binary') {
    const lower = value.toLowerCase();
    return lower === 'true' ? true : lower === 'false' ? false : value;
  }
  if (['object', 'array', 'arr'].includes(type) || type.startsWith('dict') || type.startsWith('list')) {
    try {
      return JSON.parse(value) as unknown;
    } catch {
      // vLLM tries a Python literal next.
    }
  }
  try {
    return parsePythonLiteral(value);
  } catch {
    return value;
  }
}

function functionName(body: string): string | undefined {
  return FUNCTION.exec(body)?.[1]?.trim() || undefined;
}
