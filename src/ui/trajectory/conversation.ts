import type { ConversationPart, ConversationTurn } from './conversation-turn.js';

/**
 * The recorded conversation of an episode in one neutral shape for the viewers. Trajectory lines hold
 * Strands MessageData (`{role, content: [{text} | {toolUse} | {toolResult} | {reasoning}]}`) after an
 * optional `{role: 'system', content: [{text}]}`; sft reference episodes hold chat-template messages
 * (`{role, content: string, tool_calls?}`). Both read the same here.
 */
export type { ConversationPart, ConversationTurn };

/** Normalises recorded messages; unknown block kinds become a text part naming the kind. */
export function conversationTurns(messages: readonly unknown[]): ConversationTurn[] {
  const toolNames = new Map<string, string>();
  return messages.map((message) => {
    const m = (message ?? {}) as {
      role?: unknown;
      content?: unknown;
      tool_calls?: unknown;
      reasoning_content?: unknown;
      tool_call_id?: unknown;
      name?: unknown;
    };
    const role = m.role === 'system' || m.role === 'assistant' || m.role === 'tool' ? m.role : 'user';
    if (typeof m.content === 'string') return chatTurn(role, m, toolNames);
    const blocks = Array.isArray(m.content) ? (m.content as Record<string, unknown>[]) : [];
    return { role, parts: blocks.map((block) => blockPart(block, toolNames)) };
  });
}

/** Names of the tools an episode called, with how often. */
export function toolCallCounts(turns: readonly ConversationTurn[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const turn of turns)
    for (const part of turn.parts)
      if (part.kind === 'toolCall') counts.set(part.name, (counts.get(part.name) ?? 0) + 1);
  return counts;
}

function chatTurn(
  role: ConversationTurn['role'],
  m: { content?: unknown; tool_calls?: unknown; reasoning_content?: unknown; tool_call_id?: unknown; name?: unknown },
  toolNames: Map<string, string>,
): ConversationTurn {
  const parts: ConversationPart[] = [];
  if (typeof m.reasoning_content === 'string' && m.reasoning_content)
    parts.push({ kind: 'reasoning', text: m.reasoning_content });
  if (role === 'tool') {
    const id = String(m.tool_call_id ?? '');
    parts.push({
      kind: 'toolResult',
      id,
      name: typeof m.name === 'string' ? m.name : (toolNames.get(id) ?? ''),
      status: 'success',
      text: String(m.content),
    });
    return { role, parts };
  }
  if (m.content) parts.push({ kind: 'text', text: String(m.content) });
  for (const [i, call] of (Array.isArray(m.tool_calls) ? m.tool_calls : []).entries()) {
    const c = call as { id?: string; function?: { name?: string; arguments?: unknown } };
    const id = c.id ?? `call-${i}`;
    const name = c.function?.name ?? '?';
    toolNames.set(id, name);
    parts.push({ kind: 'toolCall', id, name, input: c.function?.arguments ?? {} });
  }
  return { role, parts };
}

function blockPart(block: Record<string, unknown>, toolNames: Map<string, string>): ConversationPart {
  if (typeof block.text === 'string') return { kind: 'text', text: block.text };
  if (block.reasoning && typeof block.reasoning === 'object')
    return { kind: 'reasoning', text: String((block.reasoning as { text?: unknown }).text ?? '') };
  if (block.toolUse && typeof block.toolUse === 'object') {
    const use = block.toolUse as { name?: unknown; toolUseId?: unknown; input?: unknown };
    const id = String(use.toolUseId ?? '');
    const name = String(use.name ?? '?');
    toolNames.set(id, name);
    return { kind: 'toolCall', id, name, input: use.input ?? {} };
  }
  if (block.toolResult && typeof block.toolResult === 'object') {
    const result = block.toolResult as { toolUseId?: unknown; status?: unknown; content?: unknown };
    const id = String(result.toolUseId ?? '');
    const items = Array.isArray(result.content) ? (result.content as Record<string, unknown>[]) : [];
    const text = items
      .map((item) =>
        typeof item.text === 'string'
          ? item.text
          : 'json' in item
            ? JSON.stringify(item.json)
            : `[${Object.keys(item)[0] ?? 'empty'}]`,
      )
      .join('\n');
    return {
      kind: 'toolResult',
      id,
      name: toolNames.get(id) ?? '',
      status: result.status === 'error' ? 'error' : 'success',
      text,
    };
  }
  return { kind: 'text', text: `[${Object.keys(block)[0] ?? 'empty'} block]` };
}
