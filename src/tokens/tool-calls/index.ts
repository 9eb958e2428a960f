import { deepseekV31Parser, deepseekV3Parser } from './deepseek.js';
import { glm45Parser } from './glm45.js';
import { harmonyParser } from './harmony.js';
import { hermesParser } from './hermes.js';
import { llama3JsonParser } from './llama3-json.js';
import { phi4MiniParser } from './phi4-mini.js';
import { kimiK2Parser } from './kimi-k2.js';
import { mistralParser } from './mistral.js';
import { pythonicParser } from './pythonic.js';
import { qwen3CoderParser, seedOssParser } from './qwen3-coder.js';
import { smollm2Parser } from './smollm2.js';
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
  deepseek_v3: deepseekV3Parser,
  deepseek_v31: deepseekV31Parser,
  glm45: glm45Parser,
  glm47: { ...glm45Parser, format: 'glm47' },
  kimi_k2: kimiK2Parser,
  granite4: { ...hermesParser, format: 'granite4' },
  phi4_mini_json: phi4MiniParser,
  seed_oss: seedOssParser,
  smollm2: smollm2Parser,
};
