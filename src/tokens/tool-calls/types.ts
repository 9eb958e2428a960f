import type { ChatTool } from '../chat-types.js';

/**
 * Why a tool call in the model output could not be used; each kind is counted separately. `bad_json`:
 * the call's syntax does not parse (JSON, a Python literal, a value of the format's markup); `bad_call`:
 * it parses but is not a call (no name, arguments not an object or nested past 64 levels, stray markup);
 * `unterminated`: a call, list or value left open.
 */
export type ToolCallErrorKind = 'bad_json' | 'bad_call' | 'unterminated' | 'unknown_tool' | 'bad_arguments';

/**
 * One tool call found in generated text. `raw` is the text it was read from, exactly as in the reply:
 * the first call's raw starts where the reply's call markup starts (the gateway returns the text before
 * it as the message content), and calls written as one piece (a pythonic or Mistral JSON list) share it.
 */
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
  /** The model's reasoning: a leading `<think>` block, or harmony's `analysis` channel ('' when none). */
  readonly reasoning: string;
  /** Text outside reasoning and tool-call markup, trimmed. */
  readonly text: string;
  readonly calls: readonly ParsedToolCall[];
}

/** What a parser may read besides the text. */
export interface ToolCallParseContext {
  /**
   * The tools offered this turn. Formats that write every argument as text (`qwen3_coder`) convert each
   * value by its parameter's JSON-schema type; the others ignore them.
   */
  readonly tools?: readonly ChatTool[];
}

/** One call to write out in a format (`ToolCallParser.renderCalls`). */
export interface ToolCallToRender {
  readonly name: string;
  readonly arguments: Readonly<Record<string, unknown>>;
}

/** A tool-call format: how calls are written in model output. One module per format. */
export interface ToolCallParser {
  readonly format: string;
  parse(text: string, context?: ToolCallParseContext): ParsedTurn;
  /**
   * The calls as a model of this family writes them in its reply (the call markup only, no text around
   * it), so that parsing the result gives them back; tests and fixtures build model outputs with it.
   */
  renderCalls(calls: readonly ToolCallToRender[]): string;
}
