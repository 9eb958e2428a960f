/**
 * A message in the OpenAI/Hugging Face form chat templates are written for. `tool` messages carry one
 * tool result each; templates merge consecutive ones into a single turn.
 */
export interface ChatMessage {
  readonly role: 'system' | 'user' | 'assistant' | 'tool';
  readonly content: string;
  /** Assistant reasoning (`<think>` text); templates such as Qwen3's render or strip it. */
  readonly reasoning_content?: string;
  readonly tool_calls?: readonly ChatToolCall[];
  readonly tool_call_id?: string;
  readonly name?: string;
}

/** One tool call of an assistant message, arguments as an object (templates `tojson` them). */
export interface ChatToolCall {
  readonly id?: string;
  readonly type: 'function';
  readonly function: { readonly name: string; readonly arguments: Readonly<Record<string, unknown>> };
}

/** A tool as chat templates expect it (OpenAI function-tool form). */
export interface ChatTool {
  readonly type: 'function';
  readonly function: {
    readonly name: string;
    readonly description: string;
    readonly parameters: Readonly<Record<string, unknown>>;
  };
}
