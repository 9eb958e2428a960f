import type { ChatMessage, ChatTool } from '../tokens/chat-types.js';

/**
 * Why a request's messages do not continue the episode's recorded conversation (the previous request's
 * messages plus the reply the gateway gave), or undefined when they do and only tool results and user
 * turns were added after it. Whitespace at either end of a text and tool-call ids are not compared:
 * clients trim and renumber them, and neither changes what the model saw.
 */
export function historyBreak(
  recorded: readonly ChatMessage[],
  recordedTools: readonly ChatTool[],
  messages: readonly ChatMessage[],
  tools: readonly ChatTool[],
): string | undefined {
  if (!sameJson(recordedTools, tools)) return 'the tools changed';
  if (messages.length <= recorded.length) {
    return `history trimmed or replaced: the request has ${messages.length} messages, the recorded conversation ${recorded.length}`;
  }
  for (const [i, message] of recorded.entries()) {
    if (!sameMessage(message, messages[i]!)) {
      const what =
        i === recorded.length - 1 && message.role === 'assistant'
          ? "the model's last reply was changed"
          : `message ${i} (${message.role}) differs from the recorded one`;
      return what;
    }
  }
  for (let i = recorded.length; i < messages.length; i++) {
    const role = messages[i]!.role;
    if (role === 'assistant') return `message ${i} is an assistant message the model did not generate`;
    if (role === 'system') return `message ${i} is a system message added mid-conversation`;
  }
  return undefined;
}

function sameMessage(a: ChatMessage, b: ChatMessage): boolean {
  if (a.role !== b.role || a.content.trim() !== b.content.trim()) return false;
  const callsA = a.tool_calls ?? [];
  const callsB = b.tool_calls ?? [];
  return (
    callsA.length === callsB.length &&
    callsA.every(
      (call, i) =>
        call.function.name === callsB[i]!.function.name &&
        sameJson(call.function.arguments, callsB[i]!.function.arguments),
    )
  );
}

/**
 * Equal as JSON values. A client sends back what it was given, usually in the same key order, so the
 * native serialiser settles almost every comparison; key order is only normalised when that differs.
 */
function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b) || canonical(a) === canonical(b);
}

/** JSON with object keys sorted, so argument objects compare by value. */
export function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
}
