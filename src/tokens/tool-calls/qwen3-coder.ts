import type { ChatTool } from '../chat-types.js';
import { pythonJson } from '../python-json.js';
import { echo, malformed, namedCall } from './call-result.js';
import { salvageName } from './json-call.js';
import { type ReasoningMarkers, splitReasoning, THINK } from './reasoning.js';
import { coerceArguments } from './schema-coerce.js';
import type { ParsedToolCall, ParsedTurn, ToolCallParseContext, ToolCallParser } from './types.js';

const FUNCTION = /<function=([^>\n]*)>/y;
const FUNCTION_CLOSE = '</function>';
const PARAMETER = /<parameter=([^>\n]*)>/y;
const PARAMETER_OPEN = '<parameter=';
const PARAMETER_CLOSE = '</parameter>';

/**
 * Qwen3-Coder's XML format (also Qwen3.5-style models), vLLM's `qwen3_coder`:
 * `<tool_call><function=NAME><parameter=P>value</parameter>...</function></tool_call>`. A call starts only at
 * `<tool_call>` (a token the model generates; vLLM also takes a bare `<function=`, which text can spell). Values are text, converted by the parameter's JSON-schema types as vLLM
 * converts them (schema-coerce.ts), after one leading and one trailing line break are dropped.
 *
 * Markup is structural only where the call's structure continues after it, so a value may hold the format's
 * own tags (a file being written that contains `</parameter>`, `<parameter=x>`, or a whole call): a
 * `</parameter>` closes a value when the next parameter or `</function>` follows it and the call then ends
 * cleanly (no stray closing tag after it); a `<parameter=NAME>` of a declared, unclosed-before parameter
 * starts the next one even without the `</parameter>` (vLLM's reading of a missing close). A value with no
 * closing tag before `</function>`, text between parameters and a repeated parameter are errors the model
 * sees (vLLM drops or overwrites them silently); so is a call cut off before its `</function>`.
 */
export const qwen3CoderParser: ToolCallParser = xmlCallParser({
  format: 'qwen3_coder',
  callOpen: '<tool_call>',
  callClose: '</tool_call>',
  think: THINK,
  valueOnOwnLines: true,
});

/**
 * ByteDance Seed-OSS (vLLM's `seed_oss`): Qwen3-Coder's XML calls and values, read the same way, wrapped
 * in `<seed:tool_call>...</seed:tool_call>` after an optional `<seed:think>` block.
 */
export const seedOssParser: ToolCallParser = xmlCallParser({
  format: 'seed_oss',
  callOpen: '<seed:tool_call>',
  callClose: '</seed:tool_call>',
  think: { open: '<seed:think>', close: '</seed:think>' },
  valueOnOwnLines: false,
});

/** The wrapper markers of one family writing this XML: its call tags and its reasoning block. */
interface XmlCallMarkers {
  readonly format: string;
  readonly callOpen: string;
  readonly callClose: string;
  readonly think: ReasoningMarkers;
  /** Whether the family's template writes each value between line breaks (Qwen3-Coder) or straight (Seed-OSS). */
  readonly valueOnOwnLines: boolean;
}

/** How a reply of one family is cut: where calls start, and the boundary between two calls. */
interface Grammar {
  readonly callOpen: string;
  readonly callClose: string;
  /** The end of one call and the start of the next. */
  readonly callsBoundary: RegExp;
}

function xmlCallParser({ format, callOpen, callClose, think, valueOnOwnLines }: XmlCallMarkers): ToolCallParser {
  const pad = valueOnOwnLines ? '\n' : '';
  const grammar: Grammar = {
    callOpen,
    callClose,
    callsBoundary: new RegExp(`<\\/function>\\s*(?:${regexSource(callClose)}\\s*)?${regexSource(callOpen)}`, 'g'),
  };
  const reasoning: ReasoningMarkers = {
    ...think,
    call: { open: callOpen, close: callClose, isCall: (body) => /^\s*<function=/.test(body) },
  };
  return {
    format,
    parse(text: string, context?: ToolCallParseContext): ParsedTurn {
      const split = splitReasoning(text, reasoning);
      return { reasoning: split.reasoning, ...parseCalls(split.rest, context?.tools ?? [], grammar) };
    },
    renderCalls: (calls) =>
      calls
        .map((c) => {
          const parameters = Object.entries(c.arguments).map(
            ([k, v]) => `<parameter=${k}>${pad}${typeof v === 'string' ? v : pythonJson(v)}${pad}${PARAMETER_CLOSE}\n`,
          );
          return `${callOpen}\n<function=${c.name}>\n${parameters.join('')}${FUNCTION_CLOSE}\n${callClose}`;
        })
        .join('\n'),
  };
}

function regexSource(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/** The reply's text (outside calls, trimmed) and its calls in order. */
function parseCalls(
  text: string,
  tools: readonly ChatTool[],
  grammar: Grammar,
): { text: string; calls: ParsedToolCall[] } {
  const kept: string[] = [];
  const calls: ParsedToolCall[] = [];
  let at = 0;
  for (;;) {
    const start = text.indexOf(grammar.callOpen, at);
    if (start < 0) break;
    kept.push(text.slice(at, start));
    const read = readCall(text, start, tools, grammar);
    calls.push(read.call);
    at = read.end;
  }
  kept.push(text.slice(at));
  return { text: kept.join('').trim(), calls };
}

/** The call starting at `start` and where it ends. */
function readCall(
  text: string,
  start: number,
  tools: readonly ChatTool[],
  grammar: Grammar,
): { call: ParsedToolCall; end: number } {
  const { callOpen, callClose } = grammar;
  const headAt = skipSpace(text, start + callOpen.length);
  FUNCTION.lastIndex = headAt;
  const head = FUNCTION.exec(text);
  const name = head?.[1]?.trim() ?? '';
  if (!head || name === '') {
    const close = text.indexOf(callClose, headAt);
    const end = close < 0 ? text.length : close + callClose.length;
    const raw = text.slice(start, end);
    return {
      end,
      call: malformed(
        close < 0 && !head ? 'unterminated' : 'bad_call',
        raw,
        'a tool call must be <function=NAME> with <parameter=NAME>value</parameter> for each argument, then </function>',
        salvageName(raw),
      ),
    };
  }
  const declared = declaredParameters(tools, name);
  const read = new CallReader(text, grammar, declared).parametersFrom(FUNCTION.lastIndex);
  if (read) {
    const raw = text.slice(start, read.end);
    const bad = read.entries.find(([k], i) => k === '' || read.entries.findIndex(([other]) => other === k) < i);
    if (bad)
      return {
        end: read.end,
        call: malformed(
          'bad_call',
          raw,
          `the call to '${echo(name)}' has an unnamed or repeated parameter '${echo(bad[0])}'`,
          name,
        ),
      };
    const entries = read.entries.map(([k, v]) => [k, v.replace(/^\n/, '').replace(/\n$/, '')] as const);
    return { end: read.end, call: namedCall(name, coerceArguments(entries, tools, name), raw) };
  }
  return diagnose(text, start, FUNCTION.lastIndex, name, callClose);
}

/** The parameters a tool declares (undefined: no schema, so any `<parameter=NAME>` may start a parameter). */
function declaredParameters(tools: readonly ChatTool[], name: string): ReadonlySet<string> | undefined {
  const properties = tools.find((t) => t.function.name === name)?.function.parameters.properties;
  return typeof properties === 'object' && properties !== null ? new Set(Object.keys(properties)) : undefined;
}

type Entries = readonly (readonly [string, string])[];

/**
 * Reads a call's parameters from a position on, trying each place a value may end in order and keeping the
 * first after which the rest of the call reads too (memoised by position, so a value full of tags costs the
 * number of its tags, not more).
 */
class CallReader {
  private readonly memo = new Map<string, { end: number; entries: Entries } | null>();

  constructor(
    private readonly text: string,
    private readonly grammar: Grammar,
    private readonly declared: ReadonlySet<string> | undefined,
  ) {}

  /** The parameters from `at` on, `given` those read before it. */
  parametersFrom(at: number, given: readonly string[] = []): { end: number; entries: Entries } | null {
    const key = `${at} ${given.join('\n')}`;
    if (!this.memo.has(key)) this.memo.set(key, this.read(at, given));
    return this.memo.get(key) ?? null;
  }

  private read(from: number, given: readonly string[]): { end: number; entries: Entries } | null {
    const { text } = this;
    const at = skipSpace(text, from);
    if (text.startsWith(FUNCTION_CLOSE, at)) return this.callEnd(at + FUNCTION_CLOSE.length);
    PARAMETER.lastIndex = at;
    const open = PARAMETER.exec(text);
    if (!open) return null;
    const key = open[1]!.trim();
    const valueAt = PARAMETER.lastIndex;
    const read = [...given, key];
    for (const end of this.valueEnds(valueAt, read)) {
      const rest = this.parametersFrom(end.next, read);
      if (rest) return { end: rest.end, entries: [[key, text.slice(valueAt, end.at)], ...rest.entries] };
    }
    return null;
  }

  /** After `</function>`: the call's closing tag, then no stray closing tag may follow. */
  private callEnd(at: number): { end: number; entries: Entries } | null {
    const { text } = this;
    const { callClose } = this.grammar;
    let end = at;
    const close = skipSpace(text, at);
    if (text.startsWith(callClose, close)) end = close + callClose.length;
    const next = skipSpace(text, end);
    if ([PARAMETER_CLOSE, FUNCTION_CLOSE, callClose].some((tag) => text.startsWith(tag, next))) return null;
    return { end, entries: [] };
  }

  /**
   * Where the value starting at `valueAt` may end, in order: a `<parameter=` of a declared parameter not yet
   * `given` before its first `</parameter>`, then each `</parameter>` before the boundary of two calls (a value
   * holds a whole call, not the start of the next one).
   */
  private *valueEnds(valueAt: number, given: readonly string[]): Generator<{ at: number; next: number }> {
    const { text } = this;
    const { callsBoundary } = this.grammar;
    callsBoundary.lastIndex = valueAt;
    const boundary = callsBoundary.exec(text)?.index ?? text.length;
    const firstClose = text.indexOf(PARAMETER_CLOSE, valueAt);
    for (let open = text.indexOf(PARAMETER_OPEN, valueAt); open >= 0; open = text.indexOf(PARAMETER_OPEN, open + 1)) {
      if (firstClose >= 0 && open > firstClose) break;
      PARAMETER.lastIndex = open;
      const next = PARAMETER.exec(text);
      const name = next?.[1]?.trim() ?? '';
      if (next && !given.includes(name) && (this.declared === undefined || this.declared.has(name)))
        yield { at: open, next: open };
    }
    for (let close = firstClose; close >= 0 && close < boundary; close = text.indexOf(PARAMETER_CLOSE, close + 1))
      yield { at: close, next: close + PARAMETER_CLOSE.length };
  }
}

/** Why a call does not read, as the model is told; and where it is taken to end, so the reply's later calls still read. */
function diagnose(
  text: string,
  start: number,
  bodyAt: number,
  name: string,
  closeTag: string,
): { call: ParsedToolCall; end: number } {
  const callClose = text.indexOf(closeTag, bodyAt);
  const found = text.indexOf(FUNCTION_CLOSE, bodyAt);
  const functionClose = callClose >= 0 && found > callClose ? -1 : found;
  const end =
    callClose >= 0
      ? callClose + closeTag.length
      : functionClose >= 0
        ? functionClose + FUNCTION_CLOSE.length
        : text.length;
  const raw = text.slice(start, end);
  if (functionClose < 0)
    return {
      end,
      call: malformed('unterminated', raw, `the call to '${echo(name)}' was not closed with </function>`, name),
    };
  let at = skipSpace(text, bodyAt);
  while (at < functionClose) {
    PARAMETER.lastIndex = at;
    const open = PARAMETER.exec(text);
    if (!open)
      return {
        end,
        call: malformed(
          'bad_call',
          raw,
          `the call to '${echo(name)}' has text outside <parameter=NAME>...</parameter>: '${echo(text.slice(at, functionClose).trim())}'`,
          name,
        ),
      };
    const close = text.indexOf(PARAMETER_CLOSE, PARAMETER.lastIndex);
    if (close < 0 || close > functionClose)
      return {
        end,
        call: malformed(
          'unterminated',
          raw,
          `the parameter '${echo(open[1]!.trim())}' of the call to '${echo(name)}' was not closed with </parameter>`,
          name,
        ),
      };
    at = skipSpace(text, close + PARAMETER_CLOSE.length);
  }
  return {
    end,
    call: malformed('bad_call', raw, `text after </function> in the call to '${echo(name)}'`, name),
  };
}

function skipSpace(text: string, at: number): number {
  while (at < text.length && /\s/.test(text[at]!)) at++;
  return at;
}
