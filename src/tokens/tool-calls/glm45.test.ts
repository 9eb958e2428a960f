import { describe, expect, test } from 'vitest';
import type { ChatTool } from '../chat-types.js';
import { glm45Parser } from './glm45.js';

const tools: ChatTool[] = [
  {
    type: 'function',
    function: {
      name: 'search',
      description: '',
      parameters: {
        type: 'object',
        properties: { query: { type: 'string' }, limit: { type: 'integer' }, o: { type: 'object' } },
      },
    },
  },
];
const parse = (text: string) => glm45Parser.parse(text, { tools });
const arg = (key: string, value: string) => `<arg_key>${key}</arg_key>\n<arg_value>${value}</arg_value>\n`;
const call = (name: string, args: string) => `<tool_call>${name}\n${args}</tool_call>`;

describe('glm45Parser', () => {
  test('returns plain text with no calls', () => {
    expect(parse('It is 5.')).toStrictEqual({ reasoning: '', text: 'It is 5.', calls: [] });
  });

  test('returns parallel calls with declared values typed by the schema, the others and every string as written', () => {
    const first = call(
      'search',
      arg('query', ' 123 "東京"\\n ') +
        arg('limit', '5') +
        arg('o', '{"tags": ["a", null]}') +
        arg('py', "{'x': True}"),
    );
    const second = '<tool_call>now</tool_call>';
    expect(parse(`<think>plan</think>Looking.\n${first}\n${second}\nDone.`)).toStrictEqual({
      reasoning: 'plan',
      text: 'Looking.\n\n\nDone.',
      calls: [
        {
          ok: true,
          name: 'search',
          arguments: { query: ' 123 "東京"\\n ', limit: 5, o: { tags: ['a', null] }, py: "{'x': True}" },
          raw: first,
        },
        { ok: true, name: 'now', arguments: {}, raw: second },
      ],
    });
  });

  test('returns a string value with its white space, as vLLM does (indented code stays indented)', () => {
    const code = '    indented code    \n';
    const raw = call('search', arg('query', code));
    expect(parse(raw).calls).toStrictEqual([{ ok: true, name: 'search', arguments: { query: code }, raw }]);
  });

  test('returns GLM-4.7 calls, the first <arg_key> straight after the name', () => {
    const raw =
      '<tool_call>search<arg_key>query</arg_key><arg_value>x</arg_value><arg_key>limit</arg_key><arg_value>2</arg_value></tool_call>';
    expect(parse(raw).calls).toStrictEqual([{ ok: true, name: 'search', arguments: { query: 'x', limit: 2 }, raw }]);
  });

  test('returns the text of a value that is no JSON or literal', () => {
    const raw = call('other', arg('note', 'plain words'));
    expect(parse(raw).calls).toStrictEqual([{ ok: true, name: 'other', arguments: { note: 'plain words' }, raw }]);
  });

  test('returns values as text where the schema says string, and every value as text with no tools given, as vLLM', () => {
    const raw = call('search', arg(' query ', '42') + arg('limit', '5'));
    expect(parse(raw).calls).toStrictEqual([{ ok: true, name: 'search', arguments: { query: '42', limit: 5 }, raw }]);
    expect(glm45Parser.parse(raw)).toStrictEqual({
      reasoning: '',
      text: '',
      calls: [{ ok: true, name: 'search', arguments: { query: '42', limit: '5' }, raw }],
    });
  });

  test('returns bad_call for an empty key, and unterminated with no name for a reply that ends after <tool_call>', () => {
    const emptyKey = call('f', arg(' ', '1'));
    expect(parse(`${emptyKey}Sure.<tool_call>`)).toStrictEqual({
      reasoning: '',
      text: 'Sure.',
      calls: [
        {
          ok: false,
          kind: 'bad_call',
          name: 'f',
          raw: emptyKey,
          message: "the call to 'f' has an empty or repeated key ''",
        },
        {
          ok: false,
          kind: 'unterminated',
          raw: '<tool_call>',
          message: 'the tool call was not closed with </tool_call>',
        },
      ],
    });
  });

  test('returns bad_call and unterminated for broken calls', () => {
    const texts = [
      '<tool_call>\n<arg_key>a</arg_key><arg_value>1</arg_value></tool_call>',
      call('f', `${arg('a', '1')}stray`),
      call('f', arg('a', '1') + arg('a', '2')),
      call('f', '<arg_key>a</arg_key>\n<arg_value>1\n'),
    ];
    const open = '<tool_call>g\n<arg_key>a</arg_key>';
    expect(parse(`${texts.join('')}${open}`).calls).toStrictEqual([
      {
        ok: false,
        kind: 'bad_call',
        raw: texts[0],
        message:
          'a tool call must be NAME on its first line, then <arg_key>KEY</arg_key><arg_value>VALUE</arg_value> for each argument',
      },
      {
        ok: false,
        kind: 'bad_call',
        name: 'f',
        raw: texts[1],
        message: "the call to 'f' has text outside <arg_key>...</arg_key><arg_value>...</arg_value>: 'stray'",
      },
      {
        ok: false,
        kind: 'bad_call',
        name: 'f',
        raw: texts[2],
        message: "the call to 'f' has an empty or repeated key 'a'",
      },
      {
        ok: false,
        kind: 'unterminated',
        name: 'f',
        raw: texts[3],
        message: "the value of 'a' in the call to 'f' was not closed with </arg_value>",
      },
      {
        ok: false,
        kind: 'unterminated',
        name: 'g',
        raw: open,
        message: 'the tool call was not closed with </tool_call>',
      },
    ]);
  });

  test('returns the calls renderCalls writes, as the GLM-4.5 template writes them', () => {
    const calls = [
      { name: 'search', arguments: { query: 'é "x"', limit: 3, o: { k: [true] } } },
      { name: 'now', arguments: {} },
    ];
    const rendered = glm45Parser.renderCalls(calls);
    expect(rendered).toBe(
      `${call('search', arg('query', 'é "x"') + arg('limit', '3') + arg('o', '{"k": [true]}'))}\n${call('now', '')}`,
    );
    expect(parse(rendered).calls.map((c) => c.ok && [c.name, c.arguments])).toStrictEqual(
      calls.map((c) => [c.name, c.arguments]),
    );
  });
});
