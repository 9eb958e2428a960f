import { bracketExtent } from './bracket-extent.js';
import { echo, MAX_ARGUMENT_DEPTH, malformed, namedCall } from './call-result.js';
import { LiteralError, PythonReader, pythonLiteral } from './python-literal.js';
import { splitReasoning } from './reasoning.js';
import type { ParsedToolCall, ParsedTurn, ToolCallParser } from './types.js';

/** A call list opens a line (or the reply, or follows Llama 4's `<|python_start|>`): `[name(`. */
const LIST_START = /(?<=^|\n)[ \t]*(<\|python_start\|>\s*)?\[\s*[A-Za-z_]\w*\s*\(/g;
const PYTHON_END = /^\s*<\|python_end\|>/;

/**
 * Pythonic format (Llama 3.2, Llama 4, ToolACE and other small models): a Python list of calls with
 * keyword arguments, `[get_weather(city="Paris"), f(x=1)]`, read as `ast.literal_eval` reads values
 * (vLLM's `pythonic` parser) but by a strict literal reader: a value that is not a literal, a positional
 * argument or an unclosed list is an error the model is told of. A list is recognised at the start of a
 * line, so brackets inside prose stay text; each call of a list is answered on its own.
 */
export const pythonicParser: ToolCallParser = {
  format: 'pythonic',
  parse(text: string): ParsedTurn {
    const { reasoning, rest } = splitReasoning(text);
    const calls: ParsedToolCall[] = [];
    const kept: string[] = [];
    let from = 0;
    for (const match of rest.matchAll(LIST_START)) {
      if (match.index < from) continue;
      const open = match.index + match[0].length - match[0].replace(/^[^[]*/, '').length;
      kept.push(rest.slice(from, match.index));
      const extent = bracketExtent(rest, open, true);
      if (extent.end < 0) {
        const raw = rest.slice(match.index);
        calls.push(
          malformed('unterminated', raw, 'the list of tool calls was not closed with ]', firstName(rest, open)),
        );
        from = rest.length;
        break;
      }
      let end = extent.end;
      if (match[1]) end += PYTHON_END.exec(rest.slice(end))?.[0].length ?? 0;
      const raw = rest.slice(match.index, end);
      if (!extent.balanced)
        calls.push(malformed('bad_json', raw, 'the list of tool calls has unbalanced brackets', firstName(rest, open)));
      else calls.push(...listCalls(rest, extent.items, raw));
      from = end;
    }
    kept.push(rest.slice(from));
    return { reasoning, text: kept.join('').trim(), calls };
  },
  renderCalls: (calls) =>
    `[${calls
      .map(
        (c) =>
          `${c.name}(${Object.entries(c.arguments)
            .map(([k, v]) => `${k}=${pythonLiteral(v)}`)
            .join(', ')})`,
      )
      .join(', ')}]`,
};

/** Each item of a list as a call; `raw` is the whole list (its calls are written as one piece). */
function listCalls(text: string, items: readonly (readonly [number, number])[], raw: string): ParsedToolCall[] {
  const calls: ParsedToolCall[] = [];
  items.forEach(([from, to], index) => {
    const item = text.slice(from, to);
    // A trailing comma leaves an empty last item, as Python allows.
    if (item.trim() === '' && index === items.length - 1 && index > 0) return;
    calls.push(parseCall(item, raw));
  });
  return calls;
}

function parseCall(item: string, raw: string): ParsedToolCall {
  const reader = new PythonReader(item);
  const name = reader.identifier();
  try {
    if (name === undefined || !reader.take('('))
      return malformed(
        'bad_call',
        raw,
        `each item of the list must be a call, name(arg=value, ...); found '${echo(item.trim())}'`,
        name,
      );
    const entries: [string, unknown][] = [];
    while (!reader.take(')')) {
      const at = reader.pos;
      const key = reader.identifier();
      if (key === undefined || !reader.take('=')) {
        reader.pos = at;
        return malformed(
          'bad_call',
          raw,
          `the arguments of the call to '${echo(name)}' must be written name=value (at character ${at + 1})`,
          name,
        );
      }
      if (entries.some(([k]) => k === key))
        return malformed('bad_call', raw, `the call to '${echo(name)}' repeats the argument '${echo(key)}'`, name);
      entries.push([key, reader.literal(1)]);
      if (!reader.take(',')) {
        reader.expect(')');
        break;
      }
    }
    reader.space();
    if (!reader.done()) reader.fail('unexpected text after the call');
    return namedCall(name, Object.fromEntries(entries), raw);
  } catch (error) {
    if (!(error instanceof LiteralError)) throw error;
    if (error.kind === 'depth')
      return malformed(
        'bad_call',
        raw,
        `the arguments of the call to '${echo(name ?? '')}' nest deeper than ${MAX_ARGUMENT_DEPTH} levels`,
        name,
      );
    return malformed(
      'bad_json',
      raw,
      `the call to '${echo(name ?? '')}' is not valid Python (${echo(error.message)})`,
      name,
    );
  }
}

function firstName(text: string, open: number): string | undefined {
  return /^\[\s*([A-Za-z_]\w*)/.exec(text.slice(open))?.[1];
}
