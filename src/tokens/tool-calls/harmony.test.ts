import { describe, expect, test } from 'vitest';
import { harmonyParser } from './harmony.js';

const parse = (text: string) => harmonyParser.parse(text);
const call = (name: string, args: string, start = '<|start|>assistant') =>
  `${start}<|channel|>commentary to=functions.${name} <|constrain|>json<|message|>${args}<|call|>`;

describe('harmonyParser', () => {
  test('returns reasoning from the analysis channel and text from the final channel', () => {
    expect(
      parse(
        '<|channel|>analysis<|message|>Easy sum.<|end|><|start|>assistant<|channel|>final<|message|>It is 5.<|return|>',
      ),
    ).toStrictEqual({ reasoning: 'Easy sum.', text: 'It is 5.', calls: [] });
    expect(parse('Just text.')).toStrictEqual({ reasoning: '', text: 'Just text.', calls: [] });
  });

  test('returns every analysis message as reasoning and every other message as text, each trimmed, in order', () => {
    expect(
      parse(
        '<|channel|>analysis<|message|> one <|end|><|start|>assistant<|channel|>analysis<|message|> <|end|>' +
          '<|start|>assistant<|channel|>commentary<|message|>Looking.<|end|><|start|>assistant<|channel|>analysis<|message|>two<|end|>' +
          '<|start|>assistant<|channel|>final<|message|> Set x to=5. <|return|>',
      ),
    ).toStrictEqual({ reasoning: 'one\ntwo', text: 'Looking.\nSet x to=5.', calls: [] });
    expect(parse('Plain <|end|> words, to=x too')).toStrictEqual({
      reasoning: '',
      text: 'Plain  words, to=x too',
      calls: [],
    });
  });

  test('returns a message begun without closing the one before, and a call whose body is blank as no arguments', () => {
    const cut = '<|channel|>commentary to=functions.f ';
    const blank = '<|start|>assistant<|channel|>commentary to=functions.g<|message|> \n <|call|>';
    expect(parse(`${cut}<|start|>assistant<|channel|>final<|message|>Hi${blank}`)).toStrictEqual({
      reasoning: '',
      text: 'Hi',
      calls: [
        {
          ok: false,
          kind: 'unterminated',
          name: 'f',
          raw: cut,
          message: "the call to 'f' ended before its <|message|>",
        },
        { ok: true, name: 'g', arguments: {}, raw: blank },
      ],
    });
  });

  test('returns messages without a header, or without a channel, as text, and no empty line for blank text', () => {
    expect(
      parse(
        '<|message|>Hi<|end|>tail<|start|>assistant<|message|>more<|end|>' +
          '<|start|>assistant<|channel|>final<|message|>last<|end|><|message|>end<|end|> \n',
      ),
    ).toStrictEqual({ reasoning: '', text: 'Hi\ntail\nmore\nlast\nend', calls: [] });
  });

  test('returns a header cut short by the length limit as nothing, or as an unterminated call when it names one', () => {
    expect(parse('<|channel|>final<|message|>Hi<|end|><|start|>assistant<|channel|>analysis')).toStrictEqual({
      reasoning: '',
      text: 'Hi',
      calls: [],
    });
    const cut = '<|start|>assistant to=functions.now';
    expect(parse(`<|channel|>final<|message|>Hi<|end|>${cut}`)).toStrictEqual({
      reasoning: '',
      text: 'Hi',
      calls: [
        {
          ok: false,
          kind: 'unterminated',
          name: 'now',
          raw: cut,
          message: "the call to 'now' ended before its <|message|>",
        },
      ],
    });
  });

  test('returns one call after reasoning and a preamble, with unicode and escaped strings', () => {
    const raw = call('get_weather', '{"city": "東京", "note": "say \\"hi\\"\\n"}');
    expect(
      parse(
        `<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary<|message|>Checking.<|end|>${raw}`,
      ),
    ).toStrictEqual({
      reasoning: 'Need the weather.',
      text: 'Checking.',
      calls: [{ ok: true, name: 'get_weather', arguments: { city: '東京', note: 'say "hi"\n' }, raw }],
    });
  });

  test('returns parallel calls with nested and empty arguments, the recipient before or after the channel', () => {
    const first = call('search', '{"filter": {"tags": ["a", {"b": null}]}}', '');
    const second = '<|start|>assistant to=functions.now<|channel|>commentary json<|message|>{}<|call|>';
    const third = '<|start|>assistant<|channel|>commentary to=functions.ping<|message|>';
    expect(parse(first + second + third)).toStrictEqual({
      reasoning: '',
      text: '',
      calls: [
        { ok: true, name: 'search', arguments: { filter: { tags: ['a', { b: null }] } }, raw: first },
        { ok: true, name: 'now', arguments: {}, raw: second },
        // The reply's last <|call|> is its stop token, taken off before parsing.
        { ok: true, name: 'ping', arguments: {}, raw: third },
      ],
    });
  });

  test('returns bad_json, bad_call and unterminated for broken calls', () => {
    const badJson = call('f', '{"a": 1,}', '');
    const builtin = '<|start|>assistant<|channel|>analysis to=python<|message|>print(1)<|call|>';
    const browser = '<|start|>assistant<|channel|>analysis to=browser.search<|message|>{"q": "x"}<|call|>';
    const noName = '<|start|>assistant<|channel|>commentary to=functions. <|message|>{}<|call|>';
    const endedWrong = '<|start|>assistant<|channel|>commentary to=functions.f<|message|>{}<|end|>';
    const noBody = '<|start|>assistant<|channel|>commentary to=functions.g <|constrain|>json';
    expect(parse(badJson + builtin + browser + noName + endedWrong + noBody)).toStrictEqual({
      reasoning: '',
      text: '',
      calls: [
        {
          ok: false,
          kind: 'bad_json',
          name: 'f',
          raw: badJson,
          message:
            "the arguments of the call to 'f' are not valid JSON (Expected double-quoted property name in JSON at position 8 (line 1 column 9))",
        },
        {
          ok: false,
          kind: 'bad_call',
          raw: builtin,
          message: "only function tools can be called, addressed to=functions.NAME; 'python' is not one",
        },
        {
          ok: false,
          kind: 'bad_call',
          raw: browser,
          message: "only function tools can be called, addressed to=functions.NAME; 'browser.search' is not one",
        },
        {
          ok: false,
          kind: 'bad_call',
          raw: noName,
          message: "only function tools can be called, addressed to=functions.NAME; 'functions.' is not one",
        },
        {
          ok: false,
          kind: 'unterminated',
          name: 'f',
          raw: endedWrong,
          message: "the call to 'f' was not ended with <|call|>",
        },
        {
          ok: false,
          kind: 'unterminated',
          name: 'g',
          raw: noBody,
          message: "the call to 'g' ended before its <|message|>",
        },
      ],
    });
    // cut off by the length limit: no <|call|> (its stop token) and JSON that stops short
    const cut = call('f', '{"a": [1', '').replace('<|call|>', '');
    expect(parse(cut).calls).toStrictEqual([
      {
        ok: false,
        kind: 'unterminated',
        name: 'f',
        raw: cut,
        message: "the call to 'f' was cut off before its arguments ended",
      },
    ]);
  });

  test("returns the calls renderCalls writes, the first continuing the prompt's <|start|>assistant", () => {
    const calls = [
      { name: 'f', arguments: { s: 'é\n"', n: [1, { k: true }] } },
      { name: 'g', arguments: {} },
    ];
    const rendered = harmonyParser.renderCalls(calls);
    expect(rendered).toBe(`${call('f', '{"s": "é\\n\\"", "n": [1, {"k": true}]}', '')}${call('g', '{}')}`);
    expect(parse(rendered).calls.map((c) => c.ok && [c.name, c.arguments])).toStrictEqual(
      calls.map((c) => [c.name, c.arguments]),
    );
  });
});
