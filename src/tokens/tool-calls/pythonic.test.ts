import { describe, expect, test } from 'vitest';
import { pythonicParser } from './pythonic.js';

const parse = (text: string) => pythonicParser.parse(text);

describe('pythonicParser', () => {
  test('returns plain text, and brackets inside prose, with no calls', () => {
    expect(parse('Write [f(x)] to call f.')).toStrictEqual({
      reasoning: '',
      text: 'Write [f(x)] to call f.',
      calls: [],
    });
  });

  test('returns one call, text before and after kept', () => {
    const raw = '[get_weather(city="Paris")]';
    expect(parse(`Let me check.\n${raw}\nOne moment.`)).toStrictEqual({
      reasoning: '',
      text: 'Let me check.\n\nOne moment.',
      calls: [{ ok: true, name: 'get_weather', arguments: { city: 'Paris' }, raw }],
    });
  });

  test('returns parallel calls with nested, unicode, escaped and empty arguments, each with the list as raw', () => {
    const raw = `[search(q='caf\\u00e9 "x"\\n', opts={'deep': [1, -2.5e1, (True, None)], 2: 'two'}, s="""tri"ple""" 'joined'), now(), tag(name=r"\\d+",)]`;
    expect(parse(`<think>plan</think>${raw}`)).toStrictEqual({
      reasoning: 'plan',
      text: '',
      calls: [
        {
          ok: true,
          name: 'search',
          arguments: { q: 'café "x"\n', opts: { deep: [1, -25, [true, null]], '2': 'two' }, s: 'tri"plejoined' },
          raw,
        },
        { ok: true, name: 'now', arguments: {}, raw },
        { ok: true, name: 'tag', arguments: { name: '\\d+' }, raw },
      ],
    });
  });

  test('returns calls wrapped in Llama 4 python tags, and several lists', () => {
    const first = '<|python_start|>[f(a=1)]<|python_end|>';
    expect(parse(`${first}\n[g(b="東京")]`)).toStrictEqual({
      reasoning: '',
      text: '',
      calls: [
        { ok: true, name: 'f', arguments: { a: 1 }, raw: first },
        { ok: true, name: 'g', arguments: { b: '東京' }, raw: '[g(b="東京")]' },
      ],
    });
  });

  test("returns bad_json for a value that is not a literal, answering the list's other calls", () => {
    const raw = '[f(x=y), g(a=1)]';
    expect(parse(raw).calls).toStrictEqual([
      {
        ok: false,
        kind: 'bad_json',
        name: 'f',
        raw,
        message:
          'the call to \'f\' is not valid Python (expected a literal (a string, number, True, False, None, list, tuple or dict) at character 5, found "y)")',
      },
      { ok: true, name: 'g', arguments: { a: 1 }, raw },
    ]);
  });

  test('returns bad_call for positional and repeated arguments and items that are no call', () => {
    const raw = '[f(1), g(a=1, a=2), 3]';
    expect(parse(raw).calls).toStrictEqual([
      {
        ok: false,
        kind: 'bad_call',
        name: 'f',
        raw,
        message: "the arguments of the call to 'f' must be written name=value (at character 3)",
      },
      { ok: false, kind: 'bad_call', name: 'g', raw, message: "the call to 'g' repeats the argument 'a'" },
      {
        ok: false,
        kind: 'bad_call',
        raw,
        message: "each item of the list must be a call, name(arg=value, ...); found '3'",
      },
    ]);
  });

  test('returns unterminated for a list or string left open, and bad_json for crossed brackets', () => {
    expect(parse('ok\n[f(a="open)]')).toStrictEqual({
      reasoning: '',
      text: 'ok',
      calls: [
        {
          ok: false,
          kind: 'unterminated',
          name: 'f',
          raw: '[f(a="open)]',
          message: 'the list of tool calls was not closed with ]',
        },
      ],
    });
    expect(parse('[f(a=1] tail')).toStrictEqual({
      reasoning: '',
      text: 'tail',
      calls: [
        {
          ok: false,
          kind: 'bad_json',
          name: 'f',
          raw: '[f(a=1]',
          message: 'the list of tool calls has unbalanced brackets',
        },
      ],
    });
  });

  test('returns bad_call for arguments nested deeper than 64 levels, and accepts 64', () => {
    const nested = (depth: number): string => `[f(x=${'['.repeat(depth - 1)}${']'.repeat(depth - 1)})]`;
    expect(parse(nested(64)).calls[0]?.ok).toBe(true);
    expect(parse(nested(65)).calls).toMatchObject([
      {
        ok: false,
        kind: 'bad_call',
        name: 'f',
        message: "the arguments of the call to 'f' nest deeper than 64 levels",
      },
    ]);
  });

  test('returns the calls renderCalls writes', () => {
    const calls = [
      { name: 'f', arguments: { s: 'a"b\n', n: [1, 2.5, null], o: { k: false } } },
      { name: 'g', arguments: {} },
    ];
    const rendered = pythonicParser.renderCalls(calls);
    expect(rendered).toBe('[f(s="a\\"b\\n", n=[1, 2.5, None], o={"k": False}), g()]');
    expect(parse(rendered).calls.map((c) => c.ok && [c.name, c.arguments])).toStrictEqual(
      calls.map((c) => [c.name, c.arguments]),
    );
  });

  test('returns a list opening a line inside a string of a call as part of that call', () => {
    const raw = '[f(s="""x\n[g(b=1)]""")]';
    expect(parse(raw)).toStrictEqual({
      reasoning: '',
      text: '',
      calls: [{ ok: true, name: 'f', arguments: { s: 'x\n[g(b=1)]' }, raw }],
    });
  });

  test('returns <|python_end|> as part of a call only after <|python_start|>, and a start without an end', () => {
    expect(parse('[f(a=1)]<|python_end|>')).toStrictEqual({
      reasoning: '',
      text: '<|python_end|>',
      calls: [{ ok: true, name: 'f', arguments: { a: 1 }, raw: '[f(a=1)]' }],
    });
    expect(parse('<|python_start|>[f(a=1)] done')).toStrictEqual({
      reasoning: '',
      text: 'done',
      calls: [{ ok: true, name: 'f', arguments: { a: 1 }, raw: '<|python_start|>[f(a=1)]' }],
    });
  });

  test('returns the calls of a list with a trailing comma and spaces around its items', () => {
    for (const raw of ['[f(a=1), g(),]', '[f(a=1) , g() , ]']) {
      expect(parse(raw).calls).toStrictEqual([
        { ok: true, name: 'f', arguments: { a: 1 }, raw },
        { ok: true, name: 'g', arguments: {}, raw },
      ]);
    }
  });

  test('returns bad_call for an empty item between calls, an item without a name and an argument without one', () => {
    const found = (item: string) => `each item of the list must be a call, name(arg=value, ...); found '${item}'`;
    expect(parse('[f(), , g()]').calls).toStrictEqual([
      { ok: true, name: 'f', arguments: {}, raw: '[f(), , g()]' },
      { ok: false, kind: 'bad_call', raw: '[f(), , g()]', message: found('') },
      { ok: true, name: 'g', arguments: {}, raw: '[f(), , g()]' },
    ]);
    expect(parse('[f(), (a=1)]').calls[1]).toStrictEqual({
      ok: false,
      kind: 'bad_call',
      raw: '[f(), (a=1)]',
      message: found('(a=1)'),
    });
    expect(parse('[f(=1)]').calls).toStrictEqual([
      {
        ok: false,
        kind: 'bad_call',
        name: 'f',
        raw: '[f(=1)]',
        message: "the arguments of the call to 'f' must be written name=value (at character 3)",
      },
    ]);
  });

  test('returns bad_json for arguments without a comma between them and for text after a call', () => {
    expect(parse('[f(a=1 b=2)]').calls).toStrictEqual([
      {
        ok: false,
        kind: 'bad_json',
        name: 'f',
        raw: '[f(a=1 b=2)]',
        message: "the call to 'f' is not valid Python (expected ')' at character 7, found \"b=2)\")",
      },
    ]);
    expect(parse('[f(a=1) x]').calls).toStrictEqual([
      {
        ok: false,
        kind: 'bad_json',
        name: 'f',
        raw: '[f(a=1) x]',
        message: 'the call to \'f\' is not valid Python (unexpected text after the call at character 8, found "x")',
      },
    ]);
  });
});
