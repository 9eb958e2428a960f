import type { ParsedToolCall, ParsedTurn, ToolCallParser } from './types.js';

const THINK_OPEN = '<think>';
const THINK_CLOSE = '</think>';
const CALL = /<tool_call>([\s\S]*?)<\/tool_call>|<tool_call>([\s\S]*)$/g;
const NAME = /"name"\s*:\s*"([^"\\]+)"/;

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
};

/** A leading `<think>…</think>` block; an unclosed one (cut by the length limit) is all reasoning. */
function splitReasoning(text: string): { reasoning: string; rest: string } {
  const close = text.indexOf(THINK_CLOSE);
  if (close >= 0) {
    const before = text.slice(0, close);
    const open = before.indexOf(THINK_OPEN);
    return { reasoning: (open >= 0 ? before.slice(open + THINK_OPEN.length) : before).trim(), rest: text.slice(close + THINK_CLOSE.length) };
  }
  const trimmed = text.trimStart();
  if (trimmed.startsWith(THINK_OPEN)) return { reasoning: trimmed.slice(THINK_OPEN.length).trim(), rest: '' };
  return { reasoning: '', rest: text };
}

function parseCall(body: string, raw: string): ParsedToolCall {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (error) {
    return { ok: false, kind: 'bad_json', ...salvageName(body), raw, message: `the tool call is not valid JSON (${(error as Error).message})` };
  }
  const call = value as { name?: unknown; arguments?: unknown } | null;
  if (typeof call !== 'object' || call === null || Array.isArray(call) || typeof call.name !== 'string' || call.name === '') {
    return { ok: false, kind: 'bad_call', ...salvageName(body), raw, message: 'a tool call must be a JSON object with a string "name" and an object "arguments"' };
  }
  const args = call.arguments ?? {};
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    return { ok: false, kind: 'bad_call', name: call.name, raw, message: `"arguments" of the call to '${call.name}' must be a JSON object` };
  }
  return { ok: true, name: call.name, arguments: args as Record<string, unknown>, raw };
}

function unterminated(body: string, raw: string): ParsedToolCall {
  return { ok: false, kind: 'unterminated', ...salvageName(body), raw, message: 'the tool call was not closed with </tool_call>' };
}

function salvageName(body: string): { name?: string } {
  const name = NAME.exec(body)?.[1];
  return name === undefined ? {} : { name };
}
