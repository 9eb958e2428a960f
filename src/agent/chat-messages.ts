import type { Message, SystemPrompt, ToolResultBlock, ToolSpec } from '@strands-agents/sdk';
import type { ChatMessage, ChatTool, ChatToolCall } from '../tokens/chat-types.js';
import { pythonJson } from '../tokens/python-json.js';

export { pythonJson };

/**
 * A Strands message as chat-template messages: tool results become one `tool` message each (in call
 * order), user text one `user` message, an assistant message its text, reasoning and tool calls.
 */
export function toChatMessages(message: Message): ChatMessage[] {
  const out: ChatMessage[] = [];
  const texts: string[] = [];
  const calls: ChatToolCall[] = [];
  let reasoning = '';
  for (const block of message.content) {
    if (block.type === 'toolResultBlock')
      out.push({ role: 'tool', content: toolResultText(block), tool_call_id: block.toolUseId });
    else if (block.type === 'textBlock') texts.push(block.text);
    else if (block.type === 'reasoningBlock') reasoning += block.text ?? '';
    else if (block.type === 'toolUseBlock')
      calls.push({
        id: block.toolUseId,
        type: 'function',
        function: { name: block.name, arguments: block.input as Record<string, unknown> },
      });
  }
  if (message.role === 'assistant') {
    out.push({
      role: 'assistant',
      content: texts.join(''),
      ...(reasoning ? { reasoning_content: reasoning } : {}),
      ...(calls.length ? { tool_calls: calls } : {}),
    });
  } else if (texts.length > 0) {
    out.push({ role: 'user', content: texts.join('') });
  }
  return out;
}

/** The text a tool result shows the model: text blocks as they are, JSON blocks in Python's json.dumps style. */
export function toolResultText(block: ToolResultBlock): string {
  return block.content
    .map((item) =>
      item.type === 'textBlock'
        ? item.text
        : item.type === 'jsonBlock'
          ? pythonJson(item.json)
          : pythonJson(item.toJSON()),
    )
    .join('\n');
}

/** System prompt text from Strands' string or content-block form. */
export function systemPromptText(prompt: SystemPrompt | undefined): string | undefined {
  if (prompt === undefined) return undefined;
  if (typeof prompt === 'string') return prompt;
  return prompt.map((block) => (block.type === 'textBlock' ? block.text : '')).join('');
}

/** Strands tool specs in the OpenAI function form templates render (without the JSON Schema `$schema` key). */
export function toChatTools(specs: readonly ToolSpec[] | undefined): ChatTool[] {
  return (specs ?? []).map((spec) => {
    const { $schema: _ignored, ...parameters } = (spec.inputSchema ?? { type: 'object', properties: {} }) as Record<
      string,
      unknown
    >;
    return { type: 'function', function: { name: spec.name, description: spec.description, parameters } };
  });
}
