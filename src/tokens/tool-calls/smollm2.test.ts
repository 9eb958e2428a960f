import { describe, expect, test } from 'vitest';
import { smollm2Parser } from './smollm2.js';

const parse = (text: string) => smollm2Parser.parse(text);

describe('smollm2Parser', () => {
  test('returns plain text with no calls', () => {
    expect(parse('The answer is [5].')).toStrictEqual({ reasoning: '', text: 'The answer is [5].', calls: [] });
  });

  test('returns every call of the list, each with the whole tag as raw, text around it kept', () => {
    const raw =
      '<tool_call>[\n{"name": "get_weather", "arguments": {"city": "Köln \\"alt\\"", "days": [1, {"x": null}]}},\n{"name": "now", "arguments": {}}\n]</tool_call>';
    expect(parse(`Checking.\n${raw}\nDone.`)).toStrictEqual({
      reasoning: '',
      text: 'Checking.\n\nDone.',
      calls: [
        { ok: true, name: 'get_weather', arguments: { city: 'Köln "alt"', days: [1, { x: null }] }, raw },
        { ok: true, name: 'now', arguments: {}, raw },
      ],
    });
  });

  test('returns the calls of several tags in order, and a call without arguments as empty arguments', () => {
    const first = '<tool_call>[{"name": "calculator", "arguments": {"expression": "2 + 3"}}]</tool_call>';
    const second = '<tool_call>[{"name": "now"}]</tool_call>';
    expect(parse(`${first}${second}`).calls).toStrictEqual([
      { ok: true, name: 'calculator', arguments: { expression: '2 + 3' }, raw: first },
      { ok: true, name: 'now', arguments: {}, raw: second },
    ]);
  });

  test('returns a reasoning block before the calls, a closing tag quoted inside a call kept in the call', () => {
    const raw = '<tool_call>[{"name": "echo", "arguments": {"text": "</think>"}}]</tool_call>';
    expect(parse(`<think>echo it</think>${raw}`)).toStrictEqual({
      reasoning: 'echo it',
      text: '',
      calls: [{ ok: true, name: 'echo', arguments: { text: '</think>' }, raw }],
    });
  });

  test('returns bad_json, bad_call and unterminated for broken calls, naming the tool where it shows', () => {
    const badJson = '<tool_call>[{"name": "add", "arguments": {"a": 2,}}]</tool_call>';
    const lone = '<tool_call>{"name": "add", "arguments": {"a": 2}}</tool_call>';
    const empty = '<tool_call>[]</tool_call>';
    const noName = '<tool_call>[{"arguments": {}}, {"name": "ok", "arguments": {"x": 1}}]</tool_call>';
    const notObject = '<tool_call>[{"name": "f", "arguments": "a=1"}]</tool_call>';
    const open = '<tool_call>[{"name": "add", "arguments": {"a": 2}}]';
    expect([badJson, lone, empty, noName, notObject, open].map((t) => parse(t).calls)).toStrictEqual([
      [
        {
          ok: false,
          kind: 'bad_json',
          name: 'add',
          raw: badJson,
          message:
            'the tool call is not valid JSON (Expected double-quoted property name in JSON at position 38 (line 1 column 39))',
        },
      ],
      [
        {
          ok: false,
          kind: 'bad_call',
          name: 'add',
          raw: lone,
          message: 'inside <tool_call> the calls must be a JSON list: [{"name": ..., "arguments": {...}}, ...]',
        },
      ],
      [
        {
          ok: false,
          kind: 'bad_call',
          raw: empty,
          message: 'inside <tool_call> the calls must be a JSON list: [{"name": ..., "arguments": {...}}, ...]',
        },
      ],
      [
        {
          ok: false,
          kind: 'bad_call',
          raw: noName,
          message: 'a tool call must be a JSON object with a string "name" and an object "arguments"',
        },
        { ok: true, name: 'ok', arguments: { x: 1 }, raw: noName },
      ],
      [
        {
          ok: false,
          kind: 'bad_call',
          name: 'f',
          raw: notObject,
          message: `"arguments" of the call to 'f' must be a JSON object`,
        },
      ],
      [
        {
          ok: false,
          kind: 'unterminated',
          name: 'add',
          raw: open,
          message: 'the tool call was not closed with </tool_call>',
        },
      ],
    ]);
  });

  test('returns its own rendering parsed back, every call sharing one tag', () => {
    const calls = [
      { name: 'calculator', arguments: { expression: '12 * 7' } },
      { name: 'lookup', arguments: { id: 3, tags: ['a', 'b'] } },
    ];
    const text = smollm2Parser.renderCalls(calls);
    expect(text).toBe(
      '<tool_call>[{"name": "calculator", "arguments": {"expression": "12 * 7"}}, {"name": "lookup", "arguments": {"id": 3, "tags": ["a", "b"]}}]</tool_call>',
    );
    expect(parse(text).calls).toStrictEqual(calls.map((c) => ({ ok: true, ...c, raw: text })));
  });
});
