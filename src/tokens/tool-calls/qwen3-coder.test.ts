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
        param('tags', '["a", "b"]') +
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

  test('returns each value converted as vLLM converts it for its schema types, its JSON value where none applies, else its text', () => {
    // [schema of the parameter, value written, value read], as vLLM 0.32's coerce_to_schema_type reads them:
    // null > integer > number > boolean > object/array > string, then the text's JSON value, then the text.
    const cases: [unknown, string, unknown][] = [
      [{ type: 'integer' }, ' 7 ', 7],
      [{ type: 'long' }, '1.5', 1.5],
      [{ type: ' Integer ' }, '1.5', 1.5],
      [{ type: 'number' }, '-2e3', -2000],
      [{ type: 'float' }, 'True', 'True'],
      [{ type: 'number' }, 'inf', 'inf'],
      [{ type: 'number' }, '1e999', '1e999'],
      [{ type: 'boolean' }, 'TRUE', true],
      [{ type: 'bool' }, 'fAlse', false],
      [{ type: 'boolean' }, ' 1 ', true],
      [{ type: 'binary' }, 'true', true],
      [{ type: 'boolean' }, 'yes', 'yes'],
      [{ type: 'object' }, '{"a": true}', { a: true }],
      [{ type: 'object' }, '5', 5],
      [{ type: 'dict[str, bool]' }, '{"a": true}', { a: true }],
      [{ type: 'list' }, '[true]', [true]],
      [{ type: 'array' }, "['x', None]", "['x', None]"],
      [{ type: 'array' }, '[1e999]', '[1e999]'],
      [{ type: 'custom' }, '[1, 2]', [1, 2]],
      [{ type: 'custom' }, 'two words', 'two words'],
      [{ type: 'enum' }, '5', '5'],
      [{ enum: ['a'] }, '5', '5'],
      [{ enum: [1, null] }, 'null', null],
      [true, '[1]', '[1]'],
      [{ type: ['null', 'boolean'] }, 'TRUE', true],
      [{ anyOf: [{ type: 'null' }, { type: 'integer' }] }, '4.5', 4.5],
      [{ oneOf: [{ enum: [1] }, { type: 'boolean' }] }, 'TRUE', true],
      [{ anyOf: [{ type: 'null' }] }, '[1]', [1]],
      [{ type: 'string' }, 'NULL', 'NULL'],
      [{ type: 'string' }, 'null', 'null'],
      [{ type: ['string', 'null'] }, 'null', null],
      [{ type: ['string', 'null'] }, 'None', 'None'],
      [{ type: 'integer' }, '1_000', 1000],
      [{ type: 'bigint' }, 'True', 'True'],
      [{ type: 'number' }, '1_000.5', 1000.5],
      [{ type: 'array' }, '[true, null]', [true, null]],
      [{ type: 'arr' }, '[true]', [true]],
      [{ type: 'list[bool]' }, '[true]', [true]],
      [{ type: 'custom' }, '{"a": true}', { a: true }],
      [{ type: ['Null', 'integer'] }, '4.5', 4.5],
      [{ type: [' null ', 'integer'] }, 'NULL', null],
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

  test("returns a value holding the format's own markup whole: a literal </parameter>, an undeclared <parameter=NAME>, a whole call", () => {
    const file = (content: string) => call('write', param('path', 'a.xml') + param('content', content));
    const write = [tool('write', { path: { type: 'string' }, content: { type: 'string' } })];
    const contents = [
      'x </parameter> y',
      '<root>\n  <parameter=name>value</parameter>\n</root>',
      call('search', param('query', 'inner')),
      'ends with </parameter>\n</function>',
      'a </function> b </tool_call> c',
    ];
    for (const content of contents) {
      const raw = file(content);
      expect(qwen3CoderParser.parse(`${raw}\ndone`, { tools: write })).toStrictEqual({
        reasoning: '',
        text: 'done',
        calls: [{ ok: true, name: 'write', arguments: { path: 'a.xml', content }, raw }],
      });
    }
  });

  test('returns the next declared parameter where a value lacks its </parameter>, as vLLM reads it', () => {
    const raw = call('search', '<parameter=query>\nx\n<parameter=limit>\n5\n</parameter>\n');
    expect(parse(raw).calls).toStrictEqual([{ ok: true, name: 'search', arguments: { query: 'x', limit: 5 }, raw }]);
    // a <parameter= of a parameter the tool does not declare stays in the value, and the value then lacks a close
    const undeclared = call('search', '<parameter=query>\nx\n<parameter=other>\n5\n');
    expect(parse(undeclared).calls).toMatchObject([
      {
        ok: false,
        kind: 'unterminated',
        message: "the parameter 'query' of the call to 'search' was not closed with </parameter>",
      },
    ]);
  });

  test('returns <parameter=NAME> of a parameter already read as part of the value, not a second one', () => {
    const raw = call('search', param('query', 'a <parameter=query> b') + param('limit', '2'));
    expect(parse(raw).calls).toStrictEqual([
      { ok: true, name: 'search', arguments: { query: 'a <parameter=query> b', limit: 2 }, raw },
    ]);
  });

  test('returns a <function= written without <tool_call> as text: a call starts at the <tool_call> the model generates', () => {
    // vLLM also reads a bare <function= as a call; text that spells one out (an answer about the format) is no call here.
    const text = 'Looking.\n<function=search>\n<parameter=query>\nx\n</parameter>\n</function>';
    expect(parse(text)).toStrictEqual({ reasoning: '', text, calls: [] });
  });

  test("returns values typed by the called tool's schema, not another tool's", () => {
    const raw = call('now', param('limit', '10'));
    expect(parse(raw).calls).toStrictEqual([{ ok: true, name: 'now', arguments: { limit: '10' }, raw }]);
  });

  test('returns a call whose </tool_call> is missing, and unterminated ones with the name where they have one', () => {
    const closed = '<tool_call>\n<function= search >\n<parameter=query>\nx\n</parameter>\n</function>';
    expect(parse(closed).calls).toStrictEqual([{ ok: true, name: 'search', arguments: { query: 'x' }, raw: closed }]);
    const named = '<tool_call>\n<function=search>\n<parameter=query>\nx';
    const bare = '<tool_call>\n{"name": "now"}';
    expect([named, bare].map((text) => parse(text).calls)).toStrictEqual([
      [
        {
          ok: false,
          kind: 'unterminated',
          name: 'search',
          raw: named,
          message: "the call to 'search' was not closed with </function>",
        },
      ],
      [
        {
          ok: false,
          kind: 'unterminated',
          name: 'now',
          raw: bare,
          message:
            'a tool call must be <function=NAME> with <parameter=NAME>value</parameter> for each argument, then </function>',
        },
      ],
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
        // vLLM reads a call whose </tool_call> is missing, and so does atk: its </function> closed it
        { ok: true, name: 'now', arguments: {}, raw: noCallClose },
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
      // text after </function> ends the call, as in vLLM; the text stays text
      { ok: true, name: 'now', arguments: {}, raw: '<tool_call><function=now></function>' },
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
