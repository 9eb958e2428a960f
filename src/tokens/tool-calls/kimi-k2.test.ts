import { describe, expect, test } from 'vitest';
import { kimiK2Parser } from './kimi-k2.js';

const [BEGIN, CALL, ARGS, END, CLOSE] = [
  '<|tool_calls_section_begin|>',
  '<|tool_call_begin|>',
  '<|tool_call_argument_begin|>',
  '<|tool_call_end|>',
  '<|tool_calls_section_end|>',
];
const call = (id: string, args: string) => `${CALL}${id}${ARGS}${args}${END}`;
const parse = (text: string) => kimiK2Parser.parse(text);

describe('kimiK2Parser', () => {
  test('returns plain text with no calls', () => {
    expect(parse('It is 5.')).toStrictEqual({ reasoning: '', text: 'It is 5.', calls: [] });
  });

  test('returns parallel calls with nested, unicode, escaped and empty arguments, text before and after kept', () => {
    const first = `${BEGIN}${call('functions.get_weather:0', '{"city": "大阪", "q": "\\"x\\"\\n", "o": {"l": [null]}}')}`;
    const second = call('functions.now:1', '{}');
    expect(parse(`<think>go</think>Checking.${first} ${second}${CLOSE}Done.`)).toStrictEqual({
      reasoning: 'go',
      text: 'Checking.Done.',
      calls: [
        { ok: true, name: 'get_weather', arguments: { city: '大阪', q: '"x"\n', o: { l: [null] } }, raw: first },
        { ok: true, name: 'now', arguments: {}, raw: second },
      ],
    });
  });

  test('returns bad_json, bad_call and unterminated for broken calls', () => {
    const texts = [
      `${BEGIN}${call('functions.f:0', '{"a": 1,}')}`,
      call('get_weather', '{}'),
      `${CALL}functions.g:2${END}`,
    ];
    const open = call('functions.h:3', '{"a": 1').replace(END, '');
    expect(parse(`${texts.join('')}${open}`)).toStrictEqual({
      reasoning: '',
      text: '',
      calls: [
        {
          ok: false,
          kind: 'bad_json',
          name: 'f',
          raw: texts[0],
          message:
            "the arguments of the call to 'f' are not valid JSON (Expected double-quoted property name in JSON at position 8 (line 1 column 9))",
        },
        {
          ok: false,
          kind: 'bad_call',
          raw: texts[1],
          message: `a tool call must be functions.NAME:INDEX${ARGS}{arguments}`,
        },
        {
          ok: false,
          kind: 'bad_call',
          name: 'g',
          raw: texts[2],
          message: `a tool call must be functions.NAME:INDEX${ARGS}{arguments}`,
        },
        { ok: false, kind: 'unterminated', name: 'h', raw: open, message: `the tool call was not closed with ${END}` },
      ],
    });
  });

  test('returns the name of a call whose id stands in white space, closed or left open', () => {
    const closed = `${BEGIN}${call(' functions.f:0 ', '{"a": 1}')}`;
    const open = `${CALL}\nfunctions.g:1 ${ARGS}{"a": 1`;
    expect(parse(`${closed}${open}`).calls).toStrictEqual([
      { ok: true, name: 'f', arguments: { a: 1 }, raw: closed },
      { ok: false, kind: 'unterminated', name: 'g', raw: open, message: `the tool call was not closed with ${END}` },
    ]);
  });

  test('returns the calls renderCalls writes', () => {
    const calls = [
      { name: 'f', arguments: { s: 'é\n"', n: [1, { k: true }] } },
      { name: 'g', arguments: {} },
    ];
    const rendered = kimiK2Parser.renderCalls(calls);
    expect(rendered).toBe(
      `${BEGIN}${call('functions.f:0', '{"s": "é\\n\\"", "n": [1, {"k": true}]}')}${call('functions.g:1', '{}')}${CLOSE}`,
    );
    expect(parse(rendered).calls.map((c) => c.ok && [c.name, c.arguments])).toStrictEqual(
      calls.map((c) => [c.name, c.arguments]),
    );
  });
});
