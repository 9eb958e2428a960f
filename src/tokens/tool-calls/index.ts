import { harmonyParser } from './harmony.js';
import { hermesParser } from './hermes.js';
import { llama3JsonParser } from './llama3-json.js';
import { mistralParser } from './mistral.js';
import { pythonicParser } from './pythonic.js';
import { qwen3CoderParser } from './qwen3-coder.js';
import type { ToolCallParser } from './types.js';

export type * from './types.js';
export { hermesParser } from './hermes.js';

/** Tool-call formats by the name `agent.tool_call_format` uses; a new format is one more module and one line here. */
export const toolCallParsers: Readonly<Record<string, ToolCallParser>> = {
  hermes: hermesParser,
  qwen3_coder: qwen3CoderParser,
  llama3_json: llama3JsonParser,
  pythonic: pythonicParser,
  mistral: mistralParser,
  harmony: harmonyParser,
};
