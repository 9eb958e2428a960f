import { pythonJson } from '../python-json.js';
import { callWithJsonArguments, echo, malformed } from './call-result.js';
import type { ParsedToolCall, ParsedTurn, ToolCallParser } from './types.js';

const START = '<|start|>';
const MESSAGE = '<|message|>';
const CALL = '<|call|>';
/** What ends a message's body; `<|start|>` is a new message begun without closing the last. */
const BODY_END = /<\|end\|>|<\|call\|>|<\|return\|>|<\|start\|>/g;
const CHANNEL = /<\|channel\|>\s*([^\s<]+)/;
const RECIPIENT = /\bto=([^\s<]+)/;
const MARKUP = /<\|[a-z_]+\|>/g;

/**
 * OpenAI harmony format (gpt-oss): the reply is messages, each `<|start|>assistant` (the first one's is in
 * the prompt), a header with `<|channel|>` and maybe a recipient, `<|message|>`, the body and an end
 * marker. A message on any channel addressed `to=functions.NAME` (in the header, before or after the
 * channel) is a call with JSON arguments, ended by `<|call|>` (or the reply's end: `<|call|>` is a stop
 * token); `analysis` messages are reasoning; `final` and `commentary` messages without a recipient (tool
 * preambles) are text. A call ended any other way, with broken JSON, or addressed to a built-in tool
 * (`browser.*`, `python`) is an error the model sees.
 */
export const harmonyParser: ToolCallParser = {
  format: 'harmony',
  parse(text: string): ParsedTurn {
    const reasoning: string[] = [];
    const visible: string[] = [];
    const calls: ParsedToolCall[] = [];
    for (const message of messages(text)) {
      const recipient = RECIPIENT.exec(message.header)?.[1];
      if (recipient !== undefined) calls.push(toCall(message, recipient));
      else if (CHANNEL.exec(message.header)?.[1] === 'analysis') reasoning.push(message.body.trim());
      else visible.push(message.body.replace(MARKUP, '').trim());
    }
    return {
      reasoning: reasoning.filter(Boolean).join('\n'),
      text: visible.filter(Boolean).join('\n'),
      calls,
    };
  },
  renderCalls: (calls) =>
    calls
      .map(
        (c, i) =>
          `${i === 0 ? '' : `${START}assistant`}<|channel|>commentary to=functions.${c.name} <|constrain|>json${MESSAGE}${pythonJson(c.arguments)}${CALL}`,
      )
      .join(''),
};

interface HarmonyMessage {
  /** Text between the message's start and `<|message|>` (role, channel, recipient, content type). */
  readonly header: string;
  readonly body: string;
  /** The marker that ended the body, '' at the end of the reply, or undefined for a header never finished. */
  readonly end: string | undefined;
  readonly raw: string;
}

/** The reply's messages in order; text outside any header is a message without one. */
function messages(text: string): HarmonyMessage[] {
  const out: HarmonyMessage[] = [];
  for (let at = 0; at < text.length; ) {
    const start = at;
    if (text.startsWith(START, at)) at += START.length;
    const bodyAt = text.indexOf(MESSAGE, at);
    const next = text.indexOf(START, at);
    if (bodyAt < 0 || (next >= 0 && next < bodyAt)) {
      // No <|message|> before the next message: a header cut short, or plain text.
      const end = next >= 0 ? next : text.length;
      const chunk = text.slice(at, end);
      // Prose that says "to=" is no header; a message begun with <|start|> is.
      const cut = CHANNEL.test(chunk) || (start !== at && RECIPIENT.test(chunk));
      out.push({
        header: cut ? chunk : '',
        body: cut ? '' : chunk,
        end: cut ? undefined : '',
        raw: text.slice(start, end),
      });
      at = end;
      continue;
    }
    BODY_END.lastIndex = bodyAt + MESSAGE.length;
    const marker = BODY_END.exec(text);
    const bodyEnd = marker ? marker.index : text.length;
    const end = marker?.[0] === START ? bodyEnd : bodyEnd + (marker?.[0].length ?? 0);
    out.push({
      header: text.slice(at, bodyAt),
      body: text.slice(bodyAt + MESSAGE.length, bodyEnd),
      end: marker?.[0] ?? '',
      raw: text.slice(start, end),
    });
    at = end;
  }
  return out;
}

function toCall(message: HarmonyMessage, recipient: string): ParsedToolCall {
  const { raw } = message;
  const name = recipient.startsWith('functions.') ? recipient.slice('functions.'.length) : undefined;
  if (name === undefined || name === '')
    return malformed(
      'bad_call',
      raw,
      `only function tools can be called, addressed to=functions.NAME; '${echo(recipient)}' is not one`,
    );
  if (message.end === undefined)
    return malformed('unterminated', raw, `the call to '${echo(name)}' ended before its <|message|>`, name);
  if (message.end !== CALL && message.end !== '')
    return malformed('unterminated', raw, `the call to '${echo(name)}' was not ended with <|call|>`, name);
  const body = message.body.trim();
  const call = callWithJsonArguments(name, body === '' ? '{}' : body, raw);
  // At the reply's end without <|call|> (its stop token), JSON that does not parse was cut off by the length limit.
  if (!call.ok && message.end === '')
    return malformed('unterminated', raw, `the call to '${echo(name)}' was cut off before its arguments ended`, name);
  return call;
}
