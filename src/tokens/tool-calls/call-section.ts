import { echo, malformed } from './call-result.js';
import type { ParsedToolCall } from './types.js';

/** The markers of a format that writes its calls in one section: DeepSeek's and Kimi K2's. */
export interface SectionMarkers {
  readonly sectionOpen: string;
  readonly sectionClose: string;
  readonly callOpen: string;
  readonly callClose: string;
}

/**
 * Text and calls of a reply whose calls stand in sections (`sectionOpen`, calls each between `callOpen`
 * and `callClose`, `sectionClose`). Text outside sections is text; inside one, anything but white space
 * between calls is an error the model sees, and a call without its `callClose` is unterminated. The first
 * call's raw starts at its section's marker, so the text before the calls is what precedes its raw.
 */
export function parseSections(
  text: string,
  markers: SectionMarkers,
  parseBody: (body: string, raw: string) => ParsedToolCall,
  nameOf: (body: string) => string | undefined,
): { text: string; calls: ParsedToolCall[] } {
  const { sectionOpen, sectionClose, callOpen, callClose } = markers;
  const kept: string[] = [];
  const calls: ParsedToolCall[] = [];
  let from = 0;
  for (let open = text.indexOf(sectionOpen); open >= 0; open = text.indexOf(sectionOpen, from)) {
    kept.push(text.slice(from, open));
    const close = text.indexOf(sectionClose, open + sectionOpen.length);
    const end = close >= 0 ? close : text.length;
    let first = true;
    for (let at = open + sectionOpen.length; ; first = false) {
      while (at < end && /\s/.test(text[at]!)) at++;
      if (at >= end) break;
      const rawStart = first ? open : at;
      const next = text.indexOf(callOpen, at + (text.startsWith(callOpen, at) ? callOpen.length : 0));
      const limit = next >= 0 && next < end ? next : end;
      if (!text.startsWith(callOpen, at)) {
        const stray = text.slice(at, limit);
        calls.push(
          malformed(
            'bad_call',
            text.slice(rawStart, limit),
            `'${echo(stray.trim())}' stands among the tool calls: each is ${callOpen}...${callClose}, and ${sectionClose} ends them`,
          ),
        );
        at = limit;
        continue;
      }
      const callEnd = text.indexOf(callClose, at + callOpen.length);
      if (callEnd < 0 || callEnd >= limit) {
        const body = text.slice(at + callOpen.length, limit);
        calls.push(
          malformed(
            'unterminated',
            text.slice(rawStart, limit),
            `the tool call was not closed with ${callClose}`,
            nameOf(body),
          ),
        );
        at = limit;
        continue;
      }
      calls.push(
        parseBody(text.slice(at + callOpen.length, callEnd), text.slice(rawStart, callEnd + callClose.length)),
      );
      at = callEnd + callClose.length;
    }
    from = close >= 0 ? close + sectionClose.length : text.length;
  }
  kept.push(text.slice(from));
  return { text: kept.join('').trim(), calls };
}

/** Each call between `<tool_call>` and `</tool_call>`; the last may be open to the end of the reply. */
const TOOL_CALL_TAGS = /<tool_call>([\s\S]*?)<\/tool_call>|<tool_call>([\s\S]*)$/g;

/**
 * Text and calls of a reply whose calls each stand between `<tool_call>` and `</tool_call>` (Hermes,
 * Qwen3-Coder, GLM-4.5, which differ only in what a call's body holds; SmolLM2's body is a list of calls):
 * text outside the tags is text, and a last call without its `</tool_call>` is unterminated, with the name
 * `nameOf` salvages from its body.
 */
export function parseToolCallTags(
  text: string,
  parseBody: (body: string, raw: string) => ParsedToolCall | readonly ParsedToolCall[],
  nameOf: (body: string) => string | undefined,
): { text: string; calls: ParsedToolCall[] } {
  const calls = [...text.matchAll(TOOL_CALL_TAGS)].flatMap((match) =>
    match[1] !== undefined
      ? parseBody(match[1], match[0])
      : malformed('unterminated', match[0], 'the tool call was not closed with </tool_call>', nameOf(match[2] ?? '')),
  );
  return { text: text.replace(TOOL_CALL_TAGS, '').trim(), calls };
}
