import { pythonJson } from '../python-json.js';
import { parseSections, type SectionMarkers } from './call-section.js';
import { callWithJsonArguments, malformed } from './call-result.js';
import { splitReasoning } from './reasoning.js';
import type { ParsedToolCall, ParsedTurn, ToolCallParser, ToolCallToRender } from './types.js';

const MARKERS: SectionMarkers = {
  sectionOpen: '<｜tool▁calls▁begin｜>',
  sectionClose: '<｜tool▁calls▁end｜>',
  callOpen: '<｜tool▁call▁begin｜>',
  callClose: '<｜tool▁call▁end｜>',
};
const SEP = '<｜tool▁sep｜>';
/** V3's call after the separator: the name, then the arguments in a json code fence. */
const FENCED = /^([^\n]*)\n```json\n([\s\S]*)\n```\s*$/;

/**
 * DeepSeek V3 / R1 format (vLLM's `deepseek_v3`): calls in `<｜tool▁calls▁begin｜>…<｜tool▁calls▁end｜>`,
 * each `<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{...}\n```<｜tool▁call▁end｜>`. The
 * V3.1 form, `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>`, is read too, so one
 * parser serves both; `deepseek_v31` differs only in how it renders calls.
 */
export const deepseekV3Parser: ToolCallParser = {
  format: 'deepseek_v3',
  parse,
  renderCalls: (calls) =>
    render(calls, (c) => `function${SEP}${c.name}\n\`\`\`json\n${pythonJson(c.arguments)}\n\`\`\``, '\n'),
};

/** DeepSeek V3.1 / V3.2 format: `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>` (vLLM's `deepseek_v31`). */
export const deepseekV31Parser: ToolCallParser = {
  format: 'deepseek_v31',
  parse,
  renderCalls: (calls) => render(calls, (c) => `${c.name}${SEP}${pythonJson(c.arguments)}`, ''),
};

function parse(text: string): ParsedTurn {
  const { reasoning, rest } = splitReasoning(text);
  return { reasoning, ...parseSections(rest, MARKERS, parseBody, nameOf) };
}

function render(calls: readonly ToolCallToRender[], body: (c: ToolCallToRender) => string, between: string): string {
  const each = calls.map((c) => `${MARKERS.callOpen}${body(c)}${MARKERS.callClose}`);
  return `${MARKERS.sectionOpen}${each.join(between)}${MARKERS.sectionClose}`;
}

function parseBody(body: string, raw: string): ParsedToolCall {
  const sep = body.indexOf(SEP);
  if (sep < 0)
    return malformed(
      'bad_call',
      raw,
      `a tool call must be NAME${SEP}{arguments} (or function${SEP}NAME and a json block)`,
    );
  const before = body.slice(0, sep).trim();
  const after = body.slice(sep + SEP.length);
  const fenced = FENCED.exec(after);
  if (!fenced && before === 'function' && !after.trimStart().startsWith('{'))
    return malformed(
      'bad_call',
      raw,
      `after function${SEP} a tool call must be NAME, a line break and a \`\`\`json block`,
    );
  const name = (fenced ? fenced[1]! : before).trim();
  const args = fenced ? fenced[2]! : after;
  if (name === '') return malformed('bad_call', raw, `the tool call has no name before its arguments`);
  return callWithJsonArguments(name, args, raw);
}

function nameOf(body: string): string | undefined {
  const sep = body.indexOf(SEP);
  if (sep < 0) return undefined;
  const before = body.slice(0, sep).trim();
  const name =
    before === 'function'
      ? body
          .slice(sep + SEP.length)
          .split('\n', 1)[0]!
          .trim()
      : before;
  return name || undefined;
}
