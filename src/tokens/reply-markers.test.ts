import { describe, expect, test } from 'vitest';
import { QWEN3_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import { loadModelTokenizer, type ModelTokenizer } from './model-tokenizer.js';
import { parseReply } from './reply-markers.js';
import { hermesParser } from './tool-calls/hermes.js';

const CALL_BODY = '\n{"name": "add", "arguments": {"a": 1}}\n';

/**
 * The tokenizer as a new object, with other added tokens where given: its markers are read once per
 * tokenizer object, so a test that reads them on a new one runs that reading itself.
 */
const withAddedTokens = (tok: ModelTokenizer, addedTokens = tok.addedTokens): ModelTokenizer => ({
  ...tok,
  addedTokens,
});

describe('parseReply', () => {
  test('returns a spelled-out <tool_call> as text when the generated one lies past the stop string that cut the reply', async () => {
    const tok = await loadModelTokenizer(QWEN3_TOKENIZER_DIR);
    // The model spells '<tool_call>' out, then generates the marker as the end of the stop string '\nSTOP<tool_call>'.
    const ids = [
      ...tok.encode('I write <'),
      ...tok.encode('tool_call>{"name": "add", "arguments": {}}'),
      ...tok.encode('\nSTOP<tool_call>'),
    ];
    expect(ids.filter((id) => id === tok.tokenToId('<tool_call>'))).toHaveLength(1);
    const text = tok.decode(ids);
    const cut = text.slice(0, text.indexOf('\nSTOP<tool_call>'));
    expect(parseReply(tok, hermesParser, ids, cut)).toStrictEqual({
      reasoning: '',
      text: 'I write <tool_call>{"name": "add", "arguments": {}}',
      calls: [],
    });
  });

  test('returns the call whose <tool_call> the model generated as its token', async () => {
    const tok = await loadModelTokenizer(QWEN3_TOKENIZER_DIR);
    const ids = tok.encode(`Sure.<tool_call>${CALL_BODY}</tool_call>`);
    expect(ids).toContain(tok.tokenToId('<tool_call>'));
    const parsed = parseReply(tok, hermesParser, ids, tok.decode(ids));
    expect(parsed).toStrictEqual(hermesParser.parse(tok.decode(ids)));
    expect(parsed.calls).toHaveLength(1);
  });

  test('returns no call for a <tool_call> spelled out of ordinary tokens, and the text exactly as decoded', async () => {
    const tok = await loadModelTokenizer(QWEN3_TOKENIZER_DIR);
    // '<' and 'tool_call>' encoded apart never form the added token 151657.
    const ids = [...tok.encode('Sure.<'), ...tok.encode(`tool_call>${CALL_BODY}`), ...tok.encode('</tool_call>')];
    expect(ids).not.toContain(tok.tokenToId('<tool_call>'));
    const text = tok.decode(ids);
    expect(text).toBe(`Sure.<tool_call>${CALL_BODY}</tool_call>`);
    // Text alone cannot tell: the parser on the decoded text sees a call.
    expect(hermesParser.parse(text).calls).toHaveLength(1);
    expect(parseReply(tok, hermesParser, ids, text)).toStrictEqual({ reasoning: '', text: text.trim(), calls: [] });
  });

  test('returns only the generated call when a spelled-out one comes before it', async () => {
    const tok = await loadModelTokenizer(QWEN3_TOKENIZER_DIR);
    const spelled = [...tok.encode('I write <'), ...tok.encode('tool_call> like this. ')];
    const ids = [...spelled, ...tok.encode(`<tool_call>${CALL_BODY}</tool_call>`)];
    const parsed = parseReply(tok, hermesParser, ids, tok.decode(ids));
    expect(parsed.text).toBe('I write <tool_call> like this.');
    expect(parsed.calls).toStrictEqual([
      { ok: true, name: 'add', arguments: { a: 1 }, raw: `<tool_call>${CALL_BODY}</tool_call>` },
    ]);
  });

  test('returns a spelled-out <think> as text, not reasoning (an added token in Qwen3)', async () => {
    const tok = await loadModelTokenizer(QWEN3_TOKENIZER_DIR);
    const ids = [...tok.encode('<'), ...tok.encode('think>plan<'), ...tok.encode('/think>answer')];
    const parsed = parseReply(tok, hermesParser, ids, tok.decode(ids));
    expect(parsed).toStrictEqual({ reasoning: '', text: '<think>plan</think>answer', calls: [] });
    const generated = tok.encode('<think>plan</think>answer');
    expect(parseReply(tok, hermesParser, generated, tok.decode(generated))).toStrictEqual({
      reasoning: 'plan',
      text: 'answer',
      calls: [],
    });
  });

  test('reads a reply cut at a stop string as the prefix it was given', async () => {
    const tok = await loadModelTokenizer(QWEN3_TOKENIZER_DIR);
    const ids = [...tok.encode('a <'), ...tok.encode('tool_call> b STOP c')];
    const text = tok.decode(ids);
    const cut = text.slice(0, text.indexOf(' STOP'));
    expect(parseReply(tok, hermesParser, ids, cut)).toStrictEqual({
      reasoning: '',
      text: 'a <tool_call> b',
      calls: [],
    });
  });

  test('counts as a marker an added token of 3 or more characters without white space holding < > [ ] | or ｜', async () => {
    const tok = await loadModelTokenizer(QWEN3_TOKENIZER_DIR);
    const text = `<tool_call>${CALL_BODY}</tool_call>`;
    const ids = tok.encode(text);
    // Each tokenizer holds one added token, under an id the model never generated: spelled out, if a marker.
    const parsedWith = (token: string) =>
      parseReply(withAddedTokens(tok, new Map([[token, 10_000_000]])), hermesParser, ids, text);
    expect(parsedWith('<to')).toStrictEqual({ reasoning: '', text, calls: [] });
    // Too short, white space in it, no markup character: ordinary text, and the call is made.
    for (const token of ['<t', '>\n{', 'name']) expect(parsedWith(token)).toStrictEqual(hermesParser.parse(text));
  });

  test('reads the longest marker where two start at one place, not one inside it', async () => {
    const tok = await loadModelTokenizer(QWEN3_TOKENIZER_DIR);
    const text = `<tool_call>${CALL_BODY}</tool_call>`;
    const ids = tok.encode(text);
    // '<tool' comes first and 'call>' starts inside the generated <tool_call>: neither is read there.
    const added = new Map([
      ['<tool', 10_000_000],
      ['<tool_call>', tok.tokenToId('<tool_call>')!],
      ['</tool_call>', tok.tokenToId('</tool_call>')!],
      ['call>', 10_000_001],
    ]);
    expect(parseReply(withAddedTokens(tok, added), hermesParser, ids, text)).toStrictEqual(hermesParser.parse(text));
  });

  test('returns the reply exactly as decoded around a broken marker: its own private-use characters, a lone <, null and numbers', async () => {
    const tok = await loadModelTokenizer(QWEN3_TOKENIZER_DIR);
    const raw = '<tool_call>\n{"name": "add", "arguments": {"a": null, "b": [1.5, true], "c": "\uE000"}}\n</tool_call>';
    const ids = [...tok.encode('\uE000 says 2 < 3 <'), ...tok.encode('tool_call> here '), ...tok.encode(raw)];
    expect(parseReply(withAddedTokens(tok), hermesParser, ids, tok.decode(ids))).toStrictEqual({
      reasoning: '',
      text: '\uE000 says 2 < 3 <tool_call> here',
      calls: [{ ok: true, name: 'add', arguments: { a: null, b: [1.5, true], c: '\uE000' }, raw }],
    });
  });

  test('returns a generated <think> left open by the length limit as reasoning', async () => {
    const tok = await loadModelTokenizer(QWEN3_TOKENIZER_DIR);
    const ids = tok.encode('<think>plan the sum');
    expect(parseReply(withAddedTokens(tok), hermesParser, ids, tok.decode(ids))).toStrictEqual({
      reasoning: 'plan the sum',
      text: '',
      calls: [],
    });
  });
});
