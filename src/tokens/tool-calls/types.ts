/** Why a tool call in the model output could not be used; each kind is counted separately. */
export type ToolCallErrorKind = 'bad_json' | 'bad_call' | 'unterminated' | 'unknown_tool' | 'bad_arguments';

/** One tool call found in generated text. */
export type ParsedToolCall =
  | {
      readonly ok: true;
      readonly name: string;
      readonly arguments: Readonly<Record<string, unknown>>;
      readonly raw: string;
    }
  | {
      readonly ok: false;
      readonly kind: Extract<ToolCallErrorKind, 'bad_json' | 'bad_call' | 'unterminated'>;
      /** Tool name salvaged from the broken text, when one can be read. */
      readonly name?: string;
      readonly raw: string;
      /** What the model is told, e.g. `the tool call is not valid JSON (...)`. */
      readonly message: string;
    };

/** Generated text split into reasoning, visible text and tool calls. */
export interface ParsedTurn {
  /** Text inside a leading `<think>` block ('' when none). */
  readonly reasoning: string;
  /** Text outside reasoning and tool-call markup, trimmed. */
  readonly text: string;
  readonly calls: readonly ParsedToolCall[];
}

/** A tool-call format: how calls are written in model output. One module per format. */
export interface ToolCallParser {
  readonly format: string;
  parse(text: string): ParsedTurn;
}
