import { describe, expect, test } from 'vitest';
import { deepseekV31Parser, deepseekV3Parser } from './deepseek.js';
import { BEGIN, CALL, CLOSE, END, SEP } from '../../__fixtures__/deepseek-markers.js';

const v3 = (name: string, args: string) => `${CALL}function${SEP}${name}\n\`\`\`json\n${args}\n\`\`\`${END}`;
const v31 = (name: string, args: string) => `${CALL}${name}${SEP}${args}${END}`;
const parse = (text: string) => deepseekV3Parser.parse(text);

describe('deepseekV3Parser', () => {
  test('returns plain text with no calls', () => {
    expect(parse('It is 5.')).toStrictEqual({ reasoning: '', text: 'It is 5.', calls: [] });
  });

  test('returns parallel V3 calls with nested, unicode and escaped arguments, text before and after kept', () => {
    const first = `${BEGIN}${v3('get_weather', '{"city": "北京", "note": "a \\"b\\"\\n", "o": {"l": [1, null]}}')}`;
    const second = v3('now', '{}');
    expect(parse(`<think>plan</think>Checking.${first}\n${second}${CLOSE} Done.`)).toStrictEqual({
      reasoning: 'plan',
      text: 'Checking. Done.',
      calls: [
        {
          ok: true,
          name: 'get_weather',
          arguments: { city: '北京', note: 'a "b"\n', o: { l: [1, null] } },
          raw: first,
        },
        { ok: true, name: 'now', arguments: {}, raw: second },
      ],
    });
  });

  test('returns V3.1 calls, which both parsers read', () => {
    const raw = `${BEGIN}${v31('f', '{"a": 1}')}`;
    const expected = { reasoning: '', text: '', calls: [{ ok: true, name: 'f', arguments: { a: 1 }, raw }] };
    expect(parse(`${raw}${CLOSE}`)).toStrictEqual(expected);
    expect(deepseekV31Parser.parse(`${raw}${CLOSE}`)).toStrictEqual(expected);
  });

  test('returns bad_json, bad_call and unterminated for broken calls', () => {
    const texts = [
      `${BEGIN}${v31('f', '{"a": 1,}')}`,
      v3('g', '{"a": 1}').replace('```json\n', ''),
      v31('', '{}'),
      `${CALL}h{}${END}`,
    ];
    const stray = 'I called it.';
    const open = `${CALL}k${SEP}{"a": 1}`;
    expect(parse(`${texts.join('')}${stray}${open}`)).toStrictEqual({
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
          message: `after function${SEP} a tool call must be NAME, a line break and a \`\`\`json block`,
        },
        { ok: false, kind: 'bad_call', raw: texts[2], message: 'the tool call has no name before its arguments' },
        {
          ok: false,
          kind: 'bad_call',
          raw: texts[3],
          message: `a tool call must be NAME${SEP}{arguments} (or function${SEP}NAME and a json block)`,
        },
        {
          ok: false,
          kind: 'bad_call',
          raw: stray,
          message: `'${stray}' stands among the tool calls: each is ${CALL}...${END}, and ${CLOSE} ends them`,
        },
        { ok: false, kind: 'unterminated', name: 'k', raw: open, message: `the tool call was not closed with ${END}` },
      ],
    });
  });

  test('returns names and arguments around white space, a tool named function, and arguments that are no object', () => {
    const spaced = `${BEGIN}${CALL}function${SEP}get_weather \n\`\`\`json\n{"a": 1}\n\`\`\`${END}`;
    const namedFunction = `${CALL}function${SEP}\n{"a": 2}${END}`;
    const list = v31('f', '[1]');
    const unfenced = `${CALL} function ${SEP}g\n{"a": 3}${END}`;
    expect(parse(`${spaced}${namedFunction}${list}${unfenced}${CLOSE}`).calls).toStrictEqual([
      { ok: true, name: 'get_weather', arguments: { a: 1 }, raw: spaced },
      { ok: true, name: 'function', arguments: { a: 2 }, raw: namedFunction },
      {
        ok: false,
        kind: 'bad_call',
        name: 'f',
        raw: list,
        message: `"arguments" of the call to 'f' must be a JSON object`,
      },
      {
        ok: false,
        kind: 'bad_call',
        raw: unfenced,
        message: `after function${SEP} a tool call must be NAME, a line break and a \`\`\`json block`,
      },
    ]);
  });

  test('returns the name of a call left open in either form, trimmed, and none before a separator', () => {
    const unterminated = (raw: string, name?: string) => ({
      ok: false,
      kind: 'unterminated',
      ...(name === undefined ? {} : { name }),
      raw,
      message: `the tool call was not closed with ${END}`,
    });
    const v3Open = `${BEGIN}${CALL}function${SEP}get_weather \n\`\`\`json\n{"a": 1`;
    const v31Open = `${BEGIN}${CALL} f ${SEP}{"a": 1`;
    const noSep = `${BEGIN}${CALL}get_weather{"a": 1`;
    expect([v3Open, v31Open, noSep].map((t) => parse(t).calls)).toStrictEqual([
      [unterminated(v3Open, 'get_weather')],
      [unterminated(v31Open, 'f')],
      [unterminated(noSep)],
    ]);
  });

  test('returns the calls renderCalls writes, in the V3 and the V3.1 form', () => {
    const calls = [
      { name: 'f', arguments: { s: 'é\n"', n: [1, { k: true }] } },
      { name: 'g', arguments: {} },
    ];
    const args = '{"s": "é\\n\\"", "n": [1, {"k": true}]}';
    expect(deepseekV3Parser.renderCalls(calls)).toBe(`${BEGIN}${v3('f', args)}\n${v3('g', '{}')}${CLOSE}`);
    expect(deepseekV31Parser.renderCalls(calls)).toBe(`${BEGIN}${v31('f', args)}${v31('g', '{}')}${CLOSE}`);
    for (const parser of [deepseekV3Parser, deepseekV31Parser])
      expect(parser.parse(parser.renderCalls(calls)).calls.map((c) => c.ok && [c.name, c.arguments])).toStrictEqual(
        calls.map((c) => [c.name, c.arguments]),
      );
  });
});
