import { clipEcho } from '../../util/clip.js';
import type { ParsedToolCall } from './types.js';

/**
 * Deepest nesting of arrays and objects accepted in a call's arguments. Real tool arguments stay
 * within a handful of levels; thousands overflow the stack of every recursive consumer after the
 * parser (JSON.stringify in the SDK, schema checks), so deeper calls are rejected here.
 */
export const MAX_ARGUMENT_DEPTH = 64;

type MalformedKind = Extract<ParsedToolCall, { ok: false }>['kind'];

/** A call that could not be read: what the model is told, and the name when one could be salvaged. */
export function malformed(kind: MalformedKind, raw: string, message: string, name?: string): ParsedToolCall {
  return { ok: false, kind, ...(name === undefined ? {} : { name }), raw, message };
}

/**
 * A call whose name and arguments were read: accepted when the arguments are an object nested at most
 * `MAX_ARGUMENT_DEPTH` deep, a `bad_call` otherwise. `argumentsKey` names the field in the messages.
 */
export function namedCall(name: string, args: unknown, raw: string, argumentsKey = 'arguments'): ParsedToolCall {
  if (typeof args !== 'object' || args === null || Array.isArray(args))
    return malformed('bad_call', raw, `"${argumentsKey}" of the call to '${echo(name)}' must be a JSON object`, name);
  if (nestingDepth(args) > MAX_ARGUMENT_DEPTH)
    return malformed(
      'bad_call',
      raw,
      `the arguments of the call to '${echo(name)}' nest deeper than ${MAX_ARGUMENT_DEPTH} levels`,
      name,
    );
  return { ok: true, name, arguments: args as Record<string, unknown>, raw };
}

/** A call whose arguments are JSON text (DeepSeek, Kimi K2, gpt-oss, Mistral's NAME[ARGS] form): `bad_json` when they do not parse. */
export function callWithJsonArguments(name: string, json: string, raw: string): ParsedToolCall {
  let args: unknown;
  try {
    args = JSON.parse(json);
  } catch (error) {
    return malformed(
      'bad_json',
      raw,
      `the arguments of the call to '${echo(name)}' are not valid JSON (${echo((error as Error).message)})`,
      name,
    );
  }
  return namedCall(name, args, raw);
}

/** Deepest nesting of arrays and objects in a parsed value, counted without recursion (the value may nest thousands deep). */
export function nestingDepth(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (typeof item !== 'object' || item === null) continue;
    deepest = Math.max(deepest, depth);
    if (deepest > MAX_ARGUMENT_DEPTH) return deepest;
    for (const child of Object.values(item)) stack.push([child, depth + 1]);
  }
  return deepest;
}

/**
 * Text quoted in a reason, cut to size and on one line: the model reads the reason as one `Error:` line,
 * and V8's JSON messages quote the broken text, line breaks included.
 */
export function echo(text: string): string {
  return clipEcho(text.replace(/\r/g, '\\r').replace(/\n/g, '\\n'));
}
