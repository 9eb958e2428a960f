import { InputError } from '../errors/index.js';
import type { ModelTokenizer } from './model-tokenizer.js';
import { toolCallParsers } from './tool-calls/index.js';

/** `agent.tool_call_format`'s default: the format read off the model's chat template. */
export const AUTO_TOOL_CALL_FORMAT = 'auto';

/**
 * What each family's tool-calling template writes that no other's does, in the order they are tried:
 * several formats share a marker (Qwen3-Coder's and GLM's calls sit inside Hermes' `<tool_call>`, GLM-4.7
 * writes GLM-4.5's keys without the line break between them, Granite 4 asks for Hermes calls in its own
 * role markers, DeepSeek V3.1 drops V3's fenced JSON), so the more specific comes first.
 */
const TEMPLATE_SIGNS: readonly { readonly format: string; readonly family: string; readonly sign: RegExp }[] = [
  { format: 'harmony', family: 'gpt-oss (harmony)', sign: /<\|channel\|>/ },
  { format: 'seed_oss', family: 'Seed-OSS', sign: /<seed:tool_call>/ },
  { format: 'qwen3_coder', family: 'Qwen3-Coder', sign: /<function=[\s\S]*<parameter=/ },
  { format: 'glm47', family: 'GLM-4.7', sign: /<\/arg_key><arg_value>/ },
  { format: 'glm45', family: 'GLM-4.5', sign: /<arg_key>/ },
  { format: 'granite4', family: 'Granite 4', sign: /<\|start_of_role\|>[\s\S]*<tool_call>/ },
  { format: 'smollm2', family: 'SmolLM2 (a JSON list in <tool_call>)', sign: /<tool_call>\[/ },
  { format: 'hermes', family: 'Hermes / Qwen', sign: /<tool_call>/ },
  { format: 'phi4_mini_json', family: 'Phi-4-mini', sign: /<\|tool\|>[\s\S]*<\|\/tool\|>/ },
  { format: 'mistral', family: 'Mistral', sign: /\[TOOL_CALLS\]/ },
  { format: 'deepseek_v3', family: 'DeepSeek V3', sign: /<｜tool▁calls▁begin｜>[\s\S]*```json/ },
  { format: 'deepseek_v31', family: 'DeepSeek V3.1', sign: /<｜tool▁calls▁begin｜>/ },
  { format: 'kimi_k2', family: 'Kimi K2', sign: /<\|tool_calls_section_begin\|>/ },
  { format: 'pythonic', family: 'Llama 3.2/4 pythonic', sign: /<\|python_start\|>|func_name1\(/ },
  {
    format: 'llama3_json',
    family: 'Llama 3.x JSON',
    sign: /<\|python_tag\|>|<\|start_header_id\|>ipython|"parameters": /,
  },
];

/**
 * The tool-call format a chat template writes, found by its family's markers; the `tool_use` entry
 * of a model with several templates is read first. Undefined when none matches (a template without
 * tools, or a family atk has no format for).
 */
export function detectToolCallFormat(
  templates: Readonly<Record<string, string>>,
): { readonly format: string; readonly family: string } | undefined {
  const sources = [templates.tool_use, templates.default, ...Object.values(templates)].filter(
    (t): t is string => t !== undefined,
  );
  for (const source of sources) {
    const found = TEMPLATE_SIGNS.find((s) => s.sign.test(source));
    if (found) return { format: found.format, family: found.family };
  }
  return undefined;
}

/**
 * `agent.tool_call_format` as episodes use it: a format name stays as it is; `auto` becomes the format
 * the model's chat template writes.
 * @throws InputError naming `agent.tool_call_format` when the template writes no format atk parses.
 */
export function resolveToolCallFormat(setting: string, tokenizer: ModelTokenizer): string {
  if (setting !== AUTO_TOOL_CALL_FORMAT) return setting;
  const formats = Object.keys(toolCallParsers).join(', ');
  const found = detectToolCallFormat(tokenizer.chatTemplates);
  if (found === undefined) {
    const chatml = Object.values(tokenizer.chatTemplates).some((t) => t.includes('<|im_start|>'));
    throw new InputError(
      `agent.tool_call_format: auto finds no tool-call format in the chat template of ${tokenizer.dir}; set agent.tool_call_format to the model's format (${formats})`,
      {
        hint: chatml
          ? 'its template is ChatML without tools: set model.chat_template: chatml-tools (tools in the system turn, calls as a JSON list in <tool_call>, as SmolLM2 writes them)'
          : 'or set model.chat_template to a tool-calling template of its family',
      },
    );
  }
  if (toolCallParsers[found.format] === undefined) {
    throw new InputError(
      `agent.tool_call_format: the chat template of ${tokenizer.dir} writes ${found.family} tool calls (${found.format}), which atk does not parse; set agent.tool_call_format to one of ${formats}`,
      { hint: 'or set model.chat_template to a template in one of those formats' },
    );
  }
  return found.format;
}
