// A recorded message in one neutral shape (conversation.ts reads both recorded forms into it), in a
// declaration file: it holds types only and imports nothing, so the viewer's browser bundle reads the
// same turns through src/view/api-types.d.ts.

/** One block of a turn: text, reasoning, a tool call, or a tool's result. */
export type ConversationPart =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'reasoning'; readonly text: string }
  | { readonly kind: 'toolCall'; readonly id: string; readonly name: string; readonly input: unknown }
  | {
      readonly kind: 'toolResult';
      readonly id: string;
      readonly name: string;
      readonly status: 'success' | 'error';
      readonly text: string;
    };

export interface ConversationTurn {
  readonly role: 'system' | 'user' | 'assistant' | 'tool';
  readonly parts: readonly ConversationPart[];
}
