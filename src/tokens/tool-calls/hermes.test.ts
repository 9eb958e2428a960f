import { describe, expect, test } from 'vitest';
import { hermesParser } from './hermes.js';

describe('hermesParser', () => {
  test('returns plain text with no calls', () => {
    expect(hermesParser.parse('The answer is 5.')).toStrictEqual({
      reasoning: '',
      text: 'The answer is 5.',
      calls: [],
    });
  });

  test('returns several calls with text and reasoning around them', () => {
    const raw1 = '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>';
    const raw2 = '<tool_call>{"name":"mul","arguments":{"a":4}}</tool_call>';
    const parsed = hermesParser.parse(`<think>\nadd first\n</think>\n\nLet me compute.\n${raw1}\n${raw2}`);
    expect(parsed).toStrictEqual({
      reasoning: 'add first',
      text: 'Let me compute.',
      calls: [
        { ok: true, name: 'add', arguments: { a: 2, b: 3 }, raw: raw1 },
        { ok: true, name: 'mul', arguments: { a: 4 }, raw: raw2 },
      ],
    });
  });

  test('returns calls without arguments as empty arguments', () => {
    expect(hermesParser.parse('<tool_call>{"name": "now"}</tool_call>').calls).toStrictEqual([
      { ok: true, name: 'now', arguments: {}, raw: '<tool_call>{"name": "now"}</tool_call>' },
    ]);
  });

  test('returns bad_json with the salvaged name for invalid JSON', () => {
    const [call] = hermesParser.parse('<tool_call>{"name": "add", "arguments": {"a": 2,}}</tool_call>').calls;
    expect(call.ok).toBe(false);
    expect(call).toMatchObject({ kind: 'bad_json', name: 'add' });
    expect(!call.ok && call.message).toMatch(/^the tool call is not valid JSON \(/);
  });

  test('returns one-line reasons even where the JSON error or the name quotes text with line breaks', () => {
    // V8's message quotes the broken JSON, line breaks and all, when it is short.
    const [badJson, badArguments] = hermesParser.parse(
      '<tool_call>{"name":\n\r\n x}</tool_call><tool_call>{"name": "a\\nb", "arguments": 1}</tool_call>',
    ).calls;
    const reasons = [badJson, badArguments].map((c) => (c && !c.ok ? c.message : ''));
    expect(reasons).toStrictEqual([
      expect.stringContaining('{"name":\\n\\r\\n x}'),
      `"arguments" of the call to 'a\\nb' must be a JSON object`,
    ]);
  });

  test('returns bad_call for JSON that is not a call', () => {
    const calls = hermesParser.parse(
      '<tool_call>[1]</tool_call><tool_call>{"name": "f", "arguments": "a=1"}</tool_call>' +
        '<tool_call>null</tool_call><tool_call>{"name": "", "arguments": {}}</tool_call>',
    ).calls;
    expect(calls.map((c) => (c.ok ? 'ok' : `${c.kind}:${c.name ?? ''}`))).toStrictEqual([
      'bad_call:',
      'bad_call:f',
      'bad_call:',
      'bad_call:',
    ]);
  });

  test('returns unterminated for a call without its closing tag, even with valid JSON', () => {
    const parsed = hermesParser.parse('ok <tool_call>{"name": "add", "arguments": {}}');
    expect(parsed.text).toBe('ok');
    expect(parsed.calls).toMatchObject([{ ok: false, kind: 'unterminated', name: 'add' }]);
  });

  test('returns an unclosed think block as reasoning and ignores calls inside it', () => {
    expect(hermesParser.parse('<think>maybe <tool_call>{"name": "x"}</tool_call>')).toStrictEqual({
      reasoning: 'maybe <tool_call>{"name": "x"}</tool_call>',
      text: '',
      calls: [],
    });
  });

  test('returns reasoning ended by the first </think> outside a tool call, not one quoted inside it', () => {
    const raw = '<tool_call>\n{"name": "calc", "arguments": {"e": "</think>1"}}\n</tool_call>';
    expect(hermesParser.parse(`<think>plan <tool_call>{}</tool_call></think>ok ${raw}`)).toStrictEqual({
      reasoning: 'plan <tool_call>{}</tool_call>',
      text: 'ok',
      calls: [{ ok: true, name: 'calc', arguments: { e: '</think>1' }, raw }],
    });
    expect(hermesParser.parse('<think>I could write <tool_call> here</think>The answer is 5.')).toStrictEqual({
      reasoning: 'I could write <tool_call> here',
      text: 'The answer is 5.',
      calls: [],
    });
    const call = '<tool_call>{"name": "calc", "arguments": {}}</tool_call>';
    expect(hermesParser.parse(`<think>use <tool_call> then</think>\n${call}`)).toStrictEqual({
      reasoning: 'use <tool_call> then',
      text: '',
      calls: [{ ok: true, name: 'calc', arguments: {}, raw: call }],
    });
  });

  test('returns a call whose arguments hold </think> as a call when the reply has no reasoning', () => {
    const raw = '<tool_call>\n{"name": "calc", "arguments": {"e": "</think>"}}\n</tool_call>';
    expect(hermesParser.parse(`Let me check.\n${raw}`)).toStrictEqual({
      reasoning: '',
      text: 'Let me check.',
      calls: [{ ok: true, name: 'calc', arguments: { e: '</think>' }, raw }],
    });
  });

  test('returns bad_call for arguments nested deeper than 64 levels, and accepts 64', () => {
    const nested = (depth: number): string =>
      `<tool_call>{"name": "f", "arguments": {"x": ${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}}</tool_call>`;
    expect(hermesParser.parse(nested(64)).calls[0]?.ok).toBe(true);
    expect(hermesParser.parse(nested(65)).calls).toMatchObject([
      {
        ok: false,
        kind: 'bad_call',
        name: 'f',
        message: "the arguments of the call to 'f' nest deeper than 64 levels",
      },
    ]);
  });

  test('returns the calls renderCalls writes, as the Qwen template writes them', () => {
    const calls = [
      { name: 'add', arguments: { a: 2, b: [1, 'x'] } },
      { name: 'now', arguments: {} },
    ];
    const rendered = hermesParser.renderCalls(calls);
    expect(rendered).toBe(
      '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": [1, "x"]}}\n</tool_call>\n<tool_call>\n{"name": "now", "arguments": {}}\n</tool_call>',
    );
    expect(hermesParser.parse(rendered).calls.map((c) => c.ok && [c.name, c.arguments])).toStrictEqual(
      calls.map((c) => [c.name, c.arguments]),
    );
  });
});
