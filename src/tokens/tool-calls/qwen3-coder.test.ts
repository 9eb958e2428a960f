import { describe, expect, test } from 'vitest';
import type { ChatTool } from '../chat-types.js';
import { qwen3CoderParser } from './qwen3-coder.js';

const tool = (name: string, properties: Record<string, unknown>): ChatTool => ({
  type: 'function',
  function: { name, description: '', parameters: { type: 'object', properties } },
});
const tools = [
  tool('search', {
    query: { type: 'string' },
    limit: { type: 'integer' },
    score: { type: 'number' },
    exact: { type: 'boolean' },
    filter: { type: 'object' },
    tags: { type: 'array' },
    page: { type: ['integer', 'null'] },
  }),
  tool('now', {}),
];
const parse = (text: string) => qwen3CoderParser.parse(text, { tools });
const call = (name: string, parameters: string) =>
  `<tool_call>\n<function=${name}>\n${parameters}</function>\n</tool_call>`;
const param = (name: string, value: string) => `<parameter=${name}>\n${value}\n</parameter>\n`;

describe('qwen3CoderParser', () => {
  test('returns plain text with no calls', () => {
    expect(parse('The answer is 5.')).toStrictEqual({ reasoning: '', text: 'The answer is 5.', calls: [] });
  });

  test('returns one call with its values typed by the schema, text before and after kept', () => {
    const raw = call(
      'search',
      param('query', 'café "quoted" \\n not a break') +
        param('limit', '10') +
        param('score', '0.5') +
        param('exact', 'True') +
        param('filter', '{"lang": ["fr", "en"], "deep": {"x": null}}') +
        param('tags', "['a', 'b']") +
        param('page', 'null'),
    );
    expect(parse(`I will search.\n${raw}\nWaiting.`)).toStrictEqual({
      reasoning: '',
      text: 'I will search.\n\nWaiting.',
      calls: [
        {
          ok: true,
          name: 'search',
          arguments: {
            query: 'café "quoted" \\n not a break',
            limit: 10,
            score: 0.5,
            exact: true,
            filter: { lang: ['fr', 'en'], deep: { x: null } },
            tags: ['a', 'b'],
            page: null,
          },
          raw,
        },
      ],
    });
  });

  test('returns parallel calls and a call with no parameters, after reasoning', () => {
    const first = call('search', param('query', '東京 🌸'));
    const second = '<tool_call><function=now></function></tool_call>';
    expect(parse(`<think>two calls</think>\n${first}\n${second}`)).toStrictEqual({
      reasoning: 'two calls',
      text: '',
      calls: [
        { ok: true, name: 'search', arguments: { query: '東京 🌸' }, raw: first },
        { ok: true, name: 'now', arguments: {}, raw: second },
      ],
    });
  });

  test('returns a value with only one leading and one trailing line break taken, as vLLM does', () => {
    const raw = call('search', '<parameter=query>\n\n  two lines\nhere\n\n</parameter>\n');
    expect(parse(raw).calls).toStrictEqual([
      { ok: true, name: 'search', arguments: { query: '\n  two lines\nhere\n' }, raw },
    ]);
  });

  test('returns each value converted as vLLM converts it for its schema type, or its text where that fails', () => {
    // [schema of the parameter, value written, value read]; values chosen so a Python-literal reading differs.
    const cases: [unknown, string, unknown][] = [
      [{ type: 'integer' }, ' 7 ', 7],
      [{ type: 'long' }, '1.5', '1.5'],
      [{ type: ' Integer ' }, '1.5', '1.5'],
      [{ type: 'number' }, '-2e3', -2000],
      [{ type: 'float' }, 'True', 'True'],
      [{ type: 'boolean' }, 'TRUE', true],
      [{ type: 'bool' }, 'fAlse', false],
      [{ type: 'binary' }, 'true', true],
      [{ type: 'boolean' }, 'yes', 'yes'],
      [{ type: 'object' }, '{"a": true}', { a: true }],
      [{ type: 'dict[str, bool]' }, '{"a": true}', { a: true }],
      [{ type: 'list' }, '[true]', [true]],
      [{ type: 'array' }, "['x', None]", ['x', null]],
      [{ type: 'custom' }, '[1, 2]', [1, 2]],
      [{ type: 'custom' }, 'two words', 'two words'],
      [{ type: 'enum' }, '5', '5'],
      [{ enum: ['a'] }, '5', '5'],
      [true, '[1]', '[1]'],
      [{ type: ['null', 'boolean'] }, 'TRUE', true],
      [{ anyOf: [{ type: 'null' }, { type: 'integer' }] }, '4.5', '4.5'],
      [{ oneOf: [{ enum: [1] }, { type: 'boolean' }] }, 'TRUE', true],
      [{ anyOf: [{ type: 'null' }] }, '[1]', '[1]'],
      [{ type: 'string' }, 'NULL', null],
      // Type names match by prefix, as vLLM's startswith: 'bigint' and 'ufloat' are no integer or number.
      [{ type: 'integer' }, '1_000', 1000],
      [{ type: 'bigint' }, 'True', true],
      [{ type: 'number' }, '1_000.5', 1000.5],
      [{ type: 'ufloat' }, 'True', true],
      // JSON first for object and array types only (true and null are JSON, not Python literals).
      [{ type: 'array' }, '[true, null]', [true, null]],
      [{ type: 'arr' }, '[true]', [true]],
      [{ type: 'list[bool]' }, '[true]', [true]],
      [{ type: 'custom' }, '{"a": true}', '{"a": true}'],
      [{ type: ['Null', 'integer'] }, '4.5', '4.5'],
      [{ type: [' null ', 'integer'] }, '4.5', '4.5'],
      [null, '[1]', '[1]'],
    ];
    for (const [schema, value, expected] of cases) {
      const tool: ChatTool = {
        type: 'function',
        function: { name: 'f', description: '', parameters: { type: 'object', properties: { p: schema } } },
      };
      const [parsed] = qwen3CoderParser.parse(call('f', param('p', value)), { tools: [tool] }).calls;
      expect([schema, value, parsed?.ok && parsed.arguments.p]).toStrictEqual([schema, value, expected]);
    }
  });

  test("returns values typed by the called tool's schema, not another tool's", () => {
    const raw = call('now', param('limit', '10'));
    expect(parse(raw).calls).toStrictEqual([{ ok: true, name: 'now', arguments: { limit: '10' }, raw }]);
  });

  test('returns the trimmed name of an unterminated call, or none where it has none', () => {
    const named = '<tool_call>\n<function= search >\n<parameter=query>\nx\n</parameter>\n</function>';
    const unnamed = '<tool_call>\n<function=>\n</function>';
    const bare = '<tool_call>\n{"name": "now"}';
    const message = 'the tool call was not closed with </tool_call>';
    expect([named, unnamed, bare].map((text) => parse(text).calls)).toStrictEqual([
      [{ ok: false, kind: 'unterminated', name: 'search', raw: named, message }],
      [{ ok: false, kind: 'unterminated', raw: unnamed, message }],
      [{ ok: false, kind: 'unterminated', raw: bare, message }],
    ]);
  });

  test('returns values typed by a parameters object without properties, as vLLM reads one', () => {
    const bare: ChatTool = {
      type: 'function',
      function: { name: 'f', description: '', parameters: { p: { type: 'integer' } } },
    };
    const raw = call('f', param('p', '1.5'));
    expect(qwen3CoderParser.parse(raw, { tools: [bare] }).calls).toStrictEqual([
      { ok: true, name: 'f', arguments: { p: '1.5' }, raw },
    ]);
  });

  test('returns names trimmed and a value whose only line break is inside it unchanged', () => {
    const raw = '<tool_call><function= search ><parameter= query >a\nb</parameter></function></tool_call>';
    expect(parse(raw).calls).toStrictEqual([{ ok: true, name: 'search', arguments: { query: 'a\nb' }, raw }]);
    const unnamed = call('search', '<parameter=>x</parameter>');
    expect(parse(unnamed).calls).toStrictEqual([
      {
        ok: false,
        kind: 'bad_call',
        name: 'search',
        raw: unnamed,
        message: "the call to 'search' has an unnamed or repeated parameter ''",
      },
    ]);
  });

  test('returns the text of values that do not convert, of parameters outside the schema, and of every value without tools', () => {
    const raw = call('search', param('limit', 'ten') + param('exact', 'maybe') + param('other', '5'));
    expect(parse(raw).calls).toStrictEqual([
      { ok: true, name: 'search', arguments: { limit: 'ten', exact: 'maybe', other: '5' }, raw },
    ]);
    const typed = call('search', param('limit', '10'));
    expect(qwen3CoderParser.parse(typed).calls).toStrictEqual([
      { ok: true, name: 'search', arguments: { limit: '10' }, raw: typed },
    ]);
  });

  test('returns unterminated for a call, function or parameter left open', () => {
    const noCallClose = '<tool_call>\n<function=now>\n</function>';
    const noFunctionClose = '<tool_call>\n<function=now>\n</tool_call>';
    const noParameterClose = call('search', '<parameter=query>\nx\n');
    expect(parse(`${noFunctionClose}${noParameterClose}ok ${noCallClose}`)).toStrictEqual({
      reasoning: '',
      text: 'ok',
      calls: [
        {
          ok: false,
          kind: 'unterminated',
          name: 'now',
          raw: noFunctionClose,
          message: "the call to 'now' was not closed with </function>",
        },
        {
          ok: false,
          kind: 'unterminated',
          name: 'search',
          raw: noParameterClose,
          message: "the parameter 'query' of the call to 'search' was not closed with </parameter>",
        },
        {
          ok: false,
          kind: 'unterminated',
          name: 'now',
          raw: noCallClose,
          message: 'the tool call was not closed with </tool_call>',
        },
      ],
    });
  });

  test('returns bad_call for a missing name, JSON inside the tags, stray text and a repeated parameter', () => {
    const texts = [
      '<tool_call><function=><parameter=a>1</parameter></function></tool_call>',
      '<tool_call>{"name": "now", "arguments": {}}</tool_call>',
      call('search', `${param('query', 'x')}stray`),
      call('search', param('query', 'x') + param('query', 'y')),
      '<tool_call><function=now></function> and more</tool_call>',
    ];
    expect(parse(texts.join('')).calls).toStrictEqual([
      {
        ok: false,
        kind: 'bad_call',
        raw: texts[0],
        message:
          'a tool call must be <function=NAME> with <parameter=NAME>value</parameter> for each argument, then </function>',
      },
      {
        ok: false,
        kind: 'bad_call',
        name: 'now',
        raw: texts[1],
        message:
          'a tool call must be <function=NAME> with <parameter=NAME>value</parameter> for each argument, then </function>',
      },
      {
        ok: false,
        kind: 'bad_call',
        name: 'search',
        raw: texts[2],
        message: "the call to 'search' has text outside <parameter=NAME>...</parameter>: 'stray'",
      },
      {
        ok: false,
        kind: 'bad_call',
        name: 'search',
        raw: texts[3],
        message: "the call to 'search' has an unnamed or repeated parameter 'query'",
      },
      {
        ok: false,
        kind: 'bad_call',
        name: 'now',
        raw: texts[4],
        message: "text after </function> in the call to 'now'",
      },
    ]);
  });

  test('returns bad_call for an object value nested deeper than 64 levels', () => {
    const deep = `${'['.repeat(64)}${']'.repeat(64)}`;
    expect(parse(call('search', param('filter', `{"x": ${deep}}`))).calls).toMatchObject([
      { ok: false, kind: 'bad_call', message: "the arguments of the call to 'search' nest deeper than 64 levels" },
    ]);
  });

  test('returns the calls renderCalls writes, as the Qwen3-Coder template writes them', () => {
    const calls = [
      { name: 'search', arguments: { query: 'a\nb', limit: 3, filter: { k: [1, true] } } },
      { name: 'now', arguments: {} },
    ];
    const rendered = qwen3CoderParser.renderCalls(calls);
    expect(rendered).toBe(
      `${call('search', param('query', 'a\nb') + param('limit', '3') + param('filter', '{"k": [1, true]}'))}\n${call('now', '')}`,
    );
    expect(parse(rendered).calls.map((c) => c.ok && [c.name, c.arguments])).toStrictEqual(
      calls.map((c) => [c.name, c.arguments]),
    );
  });
});
