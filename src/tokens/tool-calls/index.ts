import { hermesParser } from './hermes.js';
import type { ToolCallParser } from './types.js';

export type * from './types.js';
export { hermesParser } from './hermes.js';

/** Tool-call formats by the name `agent.tool_call_format` uses; a new format is one more module and one line here. */
export const toolCallParsers: Readonly<Record<string, ToolCallParser>> = { hermes: hermesParser };
