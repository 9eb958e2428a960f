import { clipEcho } from '../../util/clip.js';
import { pythonJson } from '../python-json.js';
import type { ParsedToolCall, ParsedTurn, ToolCallParser } from './types.js';

const THINK_OPEN = '<think>';
const THINK_CLOSE = '</think>';
const CALL = /<tool_call>([\s\S]*?)<\/tool_call>|<tool_call>([\s\S]*)$/g;
const NAME = /"name"\s*:\s*"([^"\\]+)"/;
const CALL_OPEN = '<tool_call>';
const CALL_CLOSE = '</tool_call>';
/**
 * Deepest nesting of arrays and objects accepted in a call's arguments. Real tool arguments stay
 * within a handful of levels; thousands overflow the stack of every recursive consumer after the
 * parser (JSON.stringify in the SDK, schema checks), so deeper calls are rejected here.
 */
export const MAX_ARGUMENT_DEPTH = 64;

/**
 * Hermes format (Qwen2.5, Qwen3): `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, any number
 * per turn, after an optional `<think>` block. Strict: no JSON repair, and an unterminated tag is an error
 * even when its JSON parses, so the model is told exactly what was wrong.
 */
export const hermesParser: ToolCallParser = {
  format: 'hermes',
  parse(text: string): ParsedTurn {
    const { reasoning, rest } = splitReasoning(text);
    const calls: ParsedToolCall[] = [];
    for (const match of rest.matchAll(CALL)) {
      calls.push(match[1] !== undefined ? parseCall(match[1], match[0]) : unterminated(match[2] ?? '', match[0]));
    }
    return { reasoning, text: rest.replace(CALL, '').trim(), calls };
  },
  renderCalls: (calls) =>
    calls.map((c) => `${CALL_OPEN}\n${pythonJson({ name: c.name, arguments: c.arguments })}\n${CALL_CLOSE}`).join('\n'),
};

/**
 * A leading `<think>…</think>` block; an unclosed one (cut by the length limit) is all reasoning.
 * Reasoning ends at the first `</think>` that is not inside a tool call: one quoted in a closed call's
 * JSON (an argument holding the tag) is part of the call, which runs or is answered like any other.
 */
function splitReasoning(text: string): { reasoning: string; rest: string } {
  const close = reasoningEnd(text);
  if (close >= 0) {
    const before = text.slice(0, close);
    const open = before.indexOf(THINK_OPEN);
    return {
      reasoning: (open >= 0 ? before.slice(open + THINK_OPEN.length) : before).trim(),
      rest: text.slice(close + THINK_CLOSE.length),
    };
  }
  const trimmed = text.trimStart();
  if (trimmed.startsWith(THINK_OPEN)) return { reasoning: trimmed.slice(THINK_OPEN.length).trim(), rest: '' };
  return { reasoning: '', rest: text };
}

/**
 * Index of the first `</think>` outside a tool call, or -1. A `</think>` is inside a call when it lies
 * between a `<tool_call>` and the `</tool_call>` closing it and the text between them is JSON; a
 * `<tool_call>` merely mentioned in the reasoning ("I will write <tool_call> ...") is no call.
 */
function reasoningEnd(text: string): number {
  for (let from = 0; ; ) {
    const close = text.indexOf(THINK_CLOSE, from);
    if (close < 0) return -1;
    const open = text.lastIndexOf(CALL_OPEN, close);
    const end = open < 0 ? -1 : text.indexOf(CALL_CLOSE, open);
    if (end < close || !isJson(text.slice(open + CALL_OPEN.length, end))) return close;
    from = end + CALL_CLOSE.length;
  }
}

function isJson(body: string): boolean {
  try {
    JSON.parse(body);
    return true;
  } catch {
    return false;
  }
}

function parseCall(body: string, raw: string): ParsedToolCall {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (error) {
    return {
      ok: false,
      kind: 'bad_json',
      ...salvageName(body),
      raw,
      message: `the tool call is not valid JSON (${echo((error as Error).message)})`,
    };
  }
  const call = value as { name?: unknown; arguments?: unknown } | null;
  if (
    typeof call !== 'object' ||
    call === null ||
    Array.isArray(call) ||
    typeof call.name !== 'string' ||
    call.name === ''
  ) {
    return {
      ok: false,
      kind: 'bad_call',
      ...salvageName(body),
      raw,
      message: 'a tool call must be a JSON object with a string "name" and an object "arguments"',
    };
  }
  const args = call.arguments ?? {};
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    return {
      ok: false,
      kind: 'bad_call',
      name: call.name,
      raw,
      message: `"arguments" of the call to '${echo(call.name)}' must be a JSON object`,
    };
  }
  if (nestingDepth(args) > MAX_ARGUMENT_DEPTH) {
    return {
      ok: false,
      kind: 'bad_call',
      name: call.name,
      raw,
      message: `the arguments of the call to '${echo(call.name)}' nest deeper than ${MAX_ARGUMENT_DEPTH} levels`,
    };
  }
  return { ok: true, name: call.name, arguments: args as Record<string, unknown>, raw };
}

/** Deepest nesting of arrays and objects in a parsed JSON value, counted without recursion (the value may nest thousands deep). */
function nestingDepth(value: unknown): number {
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

function unterminated(body: string, raw: string): ParsedToolCall {
  return {
    ok: false,
    kind: 'unterminated',
    ...salvageName(body),
    raw,
    message: 'the tool call was not closed with </tool_call>',
  };
}

/**
 * Text quoted in a reason, cut to size and on one line: the model reads the reason as one `Error:` line,
 * and V8's JSON messages quote the broken text, line breaks included.
 */
function echo(text: string): string {
  return clipEcho(text.replace(/\r/g, '\\r').replace(/\n/g, '\\n'));
}

function salvageName(body: string): { name?: string } {
  const name = NAME.exec(body)?.[1];
  return name === undefined ? {} : { name };
}
