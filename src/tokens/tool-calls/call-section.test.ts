import { describe, expect, test } from 'vitest';
import { parseToolCallTags, parseSections } from './call-section.js';
import { deepseekV31Parser } from './deepseek.js';
import { parseJsonCall, salvageName } from './json-call.js';
import { BEGIN, CALL, CLOSE, END, SEP } from '../../__fixtures__/deepseek-markers.js';

// parseSections as DeepSeek V3.1 uses it.
const call = (name: string, args: string) => `${CALL}${name}${SEP}${args}${END}`;
const parse = (text: string) => deepseekV31Parser.parse(text);

describe('parseSections', () => {
  test('returns the calls of two sections, one right after the other, and the text around them trimmed', () => {
    const first = `${BEGIN}${call('f', '{"a": 1}')}`;
    const adjacent = call('h', '{}');
    const second = `${BEGIN}${call('g', '{}')}`;
    expect(parse(`\nChecking.\n${first}${adjacent}${CLOSE}${second}${CLOSE}\nDone.\n`)).toStrictEqual({
      reasoning: '',
      text: 'Checking.\n\nDone.',
      calls: [
        { ok: true, name: 'f', arguments: { a: 1 }, raw: first },
        { ok: true, name: 'h', arguments: {}, raw: adjacent },
        { ok: true, name: 'g', arguments: {}, raw: second },
      ],
    });
  });

  test('returns the calls of a section the reply ends in, the last one left open as unterminated', () => {
    const first = `${BEGIN}${call('f', '{}')}`;
    const open = `${CALL}g${SEP}{"a": 1`;
    expect(parse(`Checking. ${first}\n${open}`)).toStrictEqual({
      reasoning: '',
      text: 'Checking.',
      calls: [
        { ok: true, name: 'f', arguments: {}, raw: first },
        { ok: false, kind: 'unterminated', name: 'g', raw: open, message: `the tool call was not closed with ${END}` },
      ],
    });
  });

  test('returns a call left open as unterminated up to the next call, or to its section end, not past it', () => {
    const open = `${BEGIN}${CALL}f${SEP}{"a": 1}`;
    const next = call('g', '{}');
    const openInSection = `${BEGIN}${CALL}h${SEP}{"a": 2`;
    const last = `${BEGIN}${call('k', '{}')}`;
    expect(parse(`${open}${next}${CLOSE} and ${openInSection}${CLOSE} then ${last}${CLOSE}`)).toStrictEqual({
      reasoning: '',
      text: 'and  then',
      calls: [
        { ok: false, kind: 'unterminated', name: 'f', raw: open, message: `the tool call was not closed with ${END}` },
        { ok: true, name: 'g', arguments: {}, raw: next },
        {
          ok: false,
          kind: 'unterminated',
          name: 'h',
          raw: openInSection,
          message: `the tool call was not closed with ${END}`,
        },
        { ok: true, name: 'k', arguments: {}, raw: last },
      ],
    });
  });

  test('returns text among the calls of a section as bad_call, quoted trimmed, its raw up to the next call', () => {
    const first = `${BEGIN}${call('f', '{}')}`;
    const stray = 'I called it.\n';
    const second = call('g', '{}');
    expect(parse(`${first} ${stray}${second}${CLOSE}`).calls).toStrictEqual([
      { ok: true, name: 'f', arguments: {}, raw: first },
      {
        ok: false,
        kind: 'bad_call',
        raw: stray,
        message: `'I called it.' stands among the tool calls: each is ${CALL}...${END}, and ${CLOSE} ends them`,
      },
      { ok: true, name: 'g', arguments: {}, raw: second },
    ]);
  });

  test("takes the markers and the body's reader it is given (Kimi K2's markers, JSON bodies)", () => {
    const markers = {
      sectionOpen: '<|tool_calls_section_begin|>',
      sectionClose: '<|tool_calls_section_end|>',
      callOpen: '<|tool_call_begin|>',
      callClose: '<|tool_call_end|>',
    };
    const text = `a ${markers.sectionOpen} ${markers.callOpen}{"name": "f"}${markers.callClose} ${markers.sectionClose} b`;
    expect(parseSections(text, markers, parseJsonCall, salvageName)).toStrictEqual({
      text: 'a  b',
      calls: [
        {
          ok: true,
          name: 'f',
          arguments: {},
          raw: `${markers.sectionOpen} ${markers.callOpen}{"name": "f"}${markers.callClose}`,
        },
      ],
    });
  });
});

describe('parseToolCallTags', () => {
  test('returns each call between <tool_call> tags, the last one open to the end of the reply, and the text trimmed', () => {
    const closed = '<tool_call>{"name": "f"}</tool_call>';
    const open = '<tool_call>{"name": "g", "arguments": {';
    expect(parseToolCallTags(` a ${closed} b ${open}`, parseJsonCall, salvageName)).toStrictEqual({
      text: 'a  b',
      calls: [
        { ok: true, name: 'f', arguments: {}, raw: closed },
        {
          ok: false,
          kind: 'unterminated',
          name: 'g',
          raw: open,
          message: 'the tool call was not closed with </tool_call>',
        },
      ],
    });
  });
});
