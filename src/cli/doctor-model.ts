/**
 * `atk doctor <model>`: whether a model's chat template works with atk's tool calling, before any
 * compute: the tool-call format, a sample call parsed back from its tokens, and an append-only history.
 */
import { AtkError } from '../errors/index.js';
import { checkChatTemplate, loadModelTokenizer, type TemplateCheck } from '../tokens/index.js';
import type { DoctorRow } from './doctor-checks.js';

/** Options of the model check. */
export interface ModelDoctorOptions {
  /** A local Hugging Face model directory (tokenizer.json, tokenizer_config.json). */
  readonly model: string;
  /** A Jinja file replacing the model's chat template, as `model.chat_template`. */
  readonly chatTemplate?: string;
  /** `agent.tool_call_format` to check: `auto` (read off the template) or a format name. */
  readonly format: string;
  /** Chat template variables, as `agent.chat_template_kwargs`. */
  readonly kwargs?: Readonly<Record<string, unknown>>;
}

/**
 * The rows of the model check: format, tools in the prompt, the sample call parsed back, append-only.
 * @throws InputError when the directory has no tokenizer or chat template, or (format auto) the
 * template writes no format atk parses, naming agent.tool_call_format.
 */
export async function modelDoctorRows(options: ModelDoctorOptions): Promise<DoctorRow[]> {
  const tokenizer = await loadModelTokenizer(
    options.model,
    options.chatTemplate === undefined ? {} : { chatTemplatePath: options.chatTemplate },
  );
  let check: TemplateCheck;
  try {
    check = checkChatTemplate(tokenizer, options.format, options.kwargs);
  } catch (error) {
    if (error instanceof AtkError) throw error;
    return [
      {
        check: 'chat template',
        status: 'fail',
        detail: `rendering a tool call and its result fails: ${(error as Error).message}`,
        fix: 'set model.chat_template to a tool-calling template of the family',
      },
    ];
  }
  return [formatRow(check), toolsRow(check), parsedRow(check), appendOnlyRow(check)];
}

function formatRow(check: TemplateCheck): DoctorRow {
  return {
    check: 'tool-call format',
    status: 'pass',
    detail: check.detected ? `${check.format} (found in the chat template)` : `${check.format} (as set)`,
  };
}

function toolsRow(check: TemplateCheck): DoctorRow {
  return check.listsTools
    ? { check: 'tools in the prompt', status: 'pass', detail: 'the template lists the tools it is given' }
    : {
        check: 'tools in the prompt',
        status: 'warn',
        detail: 'the rendered prompt does not show the sample tool',
        fix: 'use the tool-calling template of the model family (model.chat_template)',
      };
}

function parsedRow(check: TemplateCheck): DoctorRow {
  if (check.parsedBack)
    return { check: 'call parsed back', status: 'pass', detail: `${oneLine(check.reply)} -> get_weather(city, days)` };
  const first = check.parsed[0];
  const got =
    check.parsed.length === 0
      ? 'no call'
      : first && !first.ok
        ? `${first.kind}: ${first.message}`
        : `${check.parsed.length} call(s)`;
  return {
    check: 'call parsed back',
    status: 'fail',
    detail: `${oneLine(check.reply)} -> ${got}`,
    fix: 'set agent.tool_call_format to the format the model writes',
  };
}

function appendOnlyRow(check: TemplateCheck): DoctorRow {
  const { drift } = check;
  if (drift.identical)
    return {
      check: 'append-only history',
      status: 'pass',
      detail: 'the re-rendered conversation is the tokens recorded',
    };
  const hunk = drift.hunks[0]!;
  return {
    check: 'append-only history',
    status: 'warn',
    detail: `re-rendering changes ${drift.hunkCount} place(s) (${drift.changedModelTokens} model tokens), first at token ${drift.firstDivergence}: ${oneLine(hunk.trajectory.text)} -> ${oneLine(hunk.rerendered.text)}`,
    fix: 'episodes still train on the exact tokens; a text-based pipeline would see another history (atk inspect-trajectory --drift)',
  };
}

/** Text as a JSON string on one line, cut to 80 characters: a table cell. */
function oneLine(text: string): string {
  const flat = JSON.stringify(text);
  return flat.length > 80 ? `${flat.slice(0, 77)}...` : flat;
}
