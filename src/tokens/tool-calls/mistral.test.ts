import { describe, expect, test } from 'vitest';
import { mistralParser } from './mistral.js';

const parse = (text: string) => mistralParser.parse(text);

describe('mistralParser', () => {
  test('returns plain text with no calls', () => {
    expect(parse('It is [sunny] today.')).toStrictEqual({ reasoning: '', text: 'It is [sunny] today.', calls: [] });
  });

  test('returns the calls of a JSON list, each with the list as raw, text before kept', () => {
    const raw =
      '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Köln \\"alt\\"", "days": [1, {"x": null}]}}, {"name": "now", "arguments": {}}]';
    expect(parse(`Checking.${raw}`)).toStrictEqual({
      reasoning: '',
      text: 'Checking.',
      calls: [
        { ok: true, name: 'get_weather', arguments: { city: 'Köln "alt"', days: [1, { x: null }] }, raw },
        { ok: true, name: 'now', arguments: {}, raw },
      ],
    });
  });

  test('returns calls of the newer NAME[ARGS]{...} form, the v11 NAME{...} form and a call id, text after kept', () => {
    const first = '[TOOL_CALLS]search[ARGS]{"q": "a}b", "o": {"n": [1]}}';
    const second = '[TOOL_CALLS]now[ARGS]{}';
    const third = '[TOOL_CALLS]add{"a": 1}';
    const fourth = '[TOOL_CALLS]add[CALL_ID]a1b2c3d4e[ARGS]{"a": 2}';
    expect(parse(`[THINK]plan[/THINK]${first}${second} ${third}${fourth}\nDone.`)).toStrictEqual({
      reasoning: 'plan',
      text: 'Done.',
      calls: [
        { ok: true, name: 'search', arguments: { q: 'a}b', o: { n: [1] } }, raw: first },
        { ok: true, name: 'now', arguments: {}, raw: second },
        { ok: true, name: 'add', arguments: { a: 1 }, raw: third },
        { ok: true, name: 'add', arguments: { a: 2 }, raw: fourth },
      ],
    });
  });

  test('returns bad_json, bad_call and unterminated for broken calls', () => {
    const badArgs = '[TOOL_CALLS]f[ARGS]{"a": 1,}';
    const badList = '[TOOL_CALLS][{"name": "f", "arguments": {"a": 1,}}]';
    const noCall = '[TOOL_CALLS] I will call it.';
    const noName = '[TOOL_CALLS][{"arguments": {}}]';
    const empty = '[TOOL_CALLS][]';
    expect([badArgs, badList, noCall, noName, empty].map((t) => parse(t).calls)).toStrictEqual([
      [
        {
          ok: false,
          kind: 'bad_json',
          name: 'f',
          raw: badArgs,
          message:
            "the arguments of the call to 'f' are not valid JSON (Expected double-quoted property name in JSON at position 8 (line 1 column 9))",
        },
      ],
      [
        {
          ok: false,
          kind: 'bad_json',
          name: 'f',
          raw: badList,
          message:
            'the tool call is not valid JSON (Expected double-quoted property name in JSON at position 36 (line 1 column 37))',
        },
      ],
      [
        {
          ok: false,
          kind: 'bad_call',
          raw: noCall,
          message:
            "after [TOOL_CALLS] a tool call must be NAME[ARGS]{...} or a JSON list of calls; found ' I will call it.'",
        },
      ],
      [
        {
          ok: false,
          kind: 'bad_call',
          raw: noName,
          message: 'a tool call must be a JSON object with a string "name" and an object "arguments"',
        },
      ],
      [{ ok: false, kind: 'bad_call', raw: empty, message: 'after [TOOL_CALLS] the list must hold at least one call' }],
    ]);
    const open = '[TOOL_CALLS]f[ARGS]{"a": "x';
    expect(parse(`ok ${open}`)).toStrictEqual({
      reasoning: '',
      text: 'ok',
      calls: [{ ok: false, kind: 'unterminated', name: 'f', raw: open, message: 'the tool call JSON was not closed' }],
    });
  });

  test("returns unterminated for a reply cut inside a call's head, before its arguments", () => {
    for (const [raw, name] of [
      ['[TOOL_CALLS]sea', 'sea'],
      ['[TOOL_CALLS]search[ARGS', 'search'],
      ['[TOOL_CALLS]search[ARGS]', 'search'],
    ] as const)
      expect(parse(`Checking.${raw}`).calls).toStrictEqual([
        { ok: false, kind: 'unterminated', name, raw, message: 'the tool call ended before its [ARGS]{...}' },
      ]);
  });

  test('returns bad_call for a JSON object after the marker and for a reply ending at the marker, unterminated for an open list', () => {
    const object = '[TOOL_CALLS]{"name": "f", "arguments": {}}';
    const openList = '[TOOL_CALLS] [{"name": "f", "arguments": {"a": 1}}';
    expect([object, openList].map((t) => parse(t).calls)).toStrictEqual([
      [
        {
          ok: false,
          kind: 'bad_call',
          raw: object,
          message: `after [TOOL_CALLS] a tool call must be NAME[ARGS]{...} or a JSON list of calls; found '{"name": "f", "arguments": {}}'`,
        },
      ],
      [{ ok: false, kind: 'unterminated', name: 'f', raw: openList, message: 'the tool call JSON was not closed' }],
    ]);
    expect(parse('Sure. [TOOL_CALLS] ')).toStrictEqual({
      reasoning: '',
      text: 'Sure.',
      calls: [
        {
          ok: false,
          kind: 'bad_call',
          raw: '[TOOL_CALLS] ',
          message: "after [TOOL_CALLS] a tool call must be NAME[ARGS]{...} or a JSON list of calls; found ' '",
        },
      ],
    });
  });

  test('returns the calls renderCalls writes', () => {
    const calls = [
      { name: 'f', arguments: { s: '東京\n"', n: [1.5, { k: false }] } },
      { name: 'g', arguments: {} },
    ];
    const rendered = mistralParser.renderCalls(calls);
    expect(rendered).toBe('[TOOL_CALLS]f[ARGS]{"s": "東京\\n\\"", "n": [1.5, {"k": false}]}[TOOL_CALLS]g[ARGS]{}');
    expect(parse(rendered).calls.map((c) => c.ok && [c.name, c.arguments])).toStrictEqual(
      calls.map((c) => [c.name, c.arguments]),
    );
  });
});
