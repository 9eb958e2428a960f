import { describe, expect, test } from 'vitest';
import { llama3JsonParser } from './llama3-json.js';

const parse = (text: string) => llama3JsonParser.parse(text);

describe('llama3JsonParser', () => {
  test('returns plain text, and JSON inside prose, with no calls', () => {
    expect(parse('The record is {"name": "Ann"} today.')).toStrictEqual({
      reasoning: '',
      text: 'The record is {"name": "Ann"} today.',
      calls: [],
    });
  });

  test('returns one call after <|python_tag|>, and one opening a line after text, text after kept', () => {
    const tagged = '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}';
    expect(parse(tagged)).toStrictEqual({
      reasoning: '',
      text: '',
      calls: [{ ok: true, name: 'get_weather', arguments: { city: 'Paris' }, raw: tagged }],
    });
    const bare = '{"name": "get_weather", "arguments": {"city": "Zürich \\"old\\" town\\n"}}';
    expect(parse(`Let me look.\n${bare}\nThen I answer.`)).toStrictEqual({
      reasoning: '',
      text: 'Let me look.\n\nThen I answer.',
      calls: [{ ok: true, name: 'get_weather', arguments: { city: 'Zürich "old" town\n' }, raw: bare }],
    });
  });

  test('returns parallel calls separated by ";", with nested and empty arguments, after reasoning', () => {
    const first = '<|python_tag|>{"name": "f", "parameters": {"o": {"list": [1, {"x": null}], "s": "a;b}"}}}';
    const second = '{"name": "now", "parameters": {}}';
    const third = '{"name": "ping", "arguments": {}}';
    expect(parse(`<think>go</think>${first}; ${second} ;\n${third};`)).toStrictEqual({
      reasoning: 'go',
      text: '',
      calls: [
        { ok: true, name: 'f', arguments: { o: { list: [1, { x: null }], s: 'a;b}' } }, raw: first },
        { ok: true, name: 'now', arguments: {}, raw: second },
        { ok: true, name: 'ping', arguments: {}, raw: third },
      ],
    });
  });

  test('returns bad_json, bad_call and unterminated for broken calls', () => {
    const badJson = '<|python_tag|>{"name": "f", "parameters": {"a": 1,}}';
    expect(parse(badJson).calls).toStrictEqual([
      {
        ok: false,
        kind: 'bad_json',
        name: 'f',
        raw: badJson,
        message:
          'the tool call is not valid JSON (Expected double-quoted property name in JSON at position 36 (line 1 column 37))',
      },
    ]);
    const notJson = '<|python_tag|>brave_search.call(query="x")';
    const noName = '<|python_tag|>{"parameters": {}}';
    const both = '{"name": "f", "parameters": {}, "arguments": {}}';
    const notObject = '{"name": "f", "parameters": [1]}';
    const noArguments = '<|python_tag|>{"name": "f"}';
    expect([notJson, noName, both, notObject, noArguments].map((t) => parse(t).calls)).toStrictEqual([
      [
        {
          ok: false,
          kind: 'bad_call',
          raw: notJson,
          message: 'after <|python_tag|> a tool call must be a JSON object {"name": ..., "parameters": {...}}',
        },
      ],
      [
        {
          ok: false,
          kind: 'bad_call',
          raw: noName,
          message: 'a tool call must be a JSON object with a string "name" and an object "parameters" or "arguments"',
        },
      ],
      [
        {
          ok: false,
          kind: 'bad_call',
          name: 'f',
          raw: both,
          message: `the call to 'f' has both "parameters" and "arguments"; write one`,
        },
      ],
      [
        {
          ok: false,
          kind: 'bad_call',
          name: 'f',
          raw: notObject,
          message: `"parameters" of the call to 'f' must be a JSON object`,
        },
      ],
      // vLLM reads a call object without its arguments as no call; atk tells the model
      [
        {
          ok: false,
          kind: 'bad_call',
          name: 'f',
          raw: noArguments,
          message: `the call to 'f' has no "parameters" or "arguments": write {} for none`,
        },
      ],
    ]);
    const open = '<|python_tag|>{"name": "f", "parameters": {"a": "}';
    expect(parse(`ok ${open}`)).toStrictEqual({
      reasoning: '',
      text: 'ok',
      calls: [{ ok: false, kind: 'unterminated', name: 'f', raw: open, message: 'the tool call JSON was not closed' }],
    });
  });

  test('returns the text after a line that <|python_tag|> opened with no JSON call', () => {
    const notJson = '<|python_tag|>brave_search.call(query="x")';
    expect(parse(`Sure. ${notJson}\nDone.`)).toStrictEqual({
      reasoning: '',
      text: 'Sure. \nDone.',
      calls: [
        {
          ok: false,
          kind: 'bad_call',
          raw: notJson,
          message: 'after <|python_tag|> a tool call must be a JSON object {"name": ..., "parameters": {...}}',
        },
      ],
    });
  });

  test('returns the calls renderCalls writes', () => {
    const calls = [
      { name: 'f', arguments: { s: 'é;"', n: [1, { k: true }] } },
      { name: 'g', arguments: {} },
    ];
    const rendered = llama3JsonParser.renderCalls(calls);
    expect(rendered).toBe(
      '<|python_tag|>{"name": "f", "parameters": {"s": "é;\\"", "n": [1, {"k": true}]}}; {"name": "g", "parameters": {}}',
    );
    expect(parse(rendered).calls.map((c) => c.ok && [c.name, c.arguments])).toStrictEqual(
      calls.map((c) => [c.name, c.arguments]),
    );
  });
});
