import { describe, expect, test } from 'vitest';
import { phi4MiniParser } from './phi4-mini.js';

const parse = (text: string) => phi4MiniParser.parse(text);

describe('phi4MiniParser', () => {
  test('returns plain text with no calls', () => {
    expect(parse('It is 5.')).toStrictEqual({ reasoning: '', text: 'It is 5.', calls: [] });
  });

  test('returns each call of the functools list, "arguments" or "parameters", text around kept', () => {
    const raw =
      'functools[{"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2]}}, {"name": "now", "parameters": {}}]';
    expect(parse(`Let me check. ${raw} Done.`)).toStrictEqual({
      reasoning: '',
      text: 'Let me check.  Done.',
      calls: [
        { ok: true, name: 'get_weather', arguments: { city: 'Paris', days: [1, 2] }, raw },
        { ok: true, name: 'now', arguments: {}, raw },
      ],
    });
  });

  test('returns a value holding "]" whole, where vLLM\'s pattern stops at the first "]"', () => {
    const raw = 'functools[{"name": "note", "arguments": {"text": "a] b"}}]';
    expect(parse(raw).calls).toStrictEqual([{ ok: true, name: 'note', arguments: { text: 'a] b' }, raw }]);
  });

  test('returns unterminated, bad_json and bad_call for a list cut short, not JSON, or holding no call', () => {
    const cut = 'functools[{"name": "f", "arguments": {';
    const notJson = "functools[{'name': 'f'}]";
    const empty = 'functools[]';
    const noName = 'functools[{"arguments": {}}]';
    expect(
      [cut, notJson, empty, noName].map((t) => parse(t).calls.map((c) => !c.ok && [c.kind, c.message])),
    ).toStrictEqual([
      [['unterminated', 'the functools[...] list of tool calls was not closed']],
      [['bad_json', expect.stringMatching(/^the functools\[\.\.\.\] list is not valid JSON \(/)]],
      [['bad_call', 'functools[...] must list at least one call {"name": ..., "arguments": {...}}']],
      [
        [
          'bad_call',
          'a tool call must be a JSON object with a string "name" and an object "arguments" or "parameters"',
        ],
      ],
    ]);
  });
});
