import { describe, expect, test } from 'vitest';
import { QWEN3_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import { loadModelTokenizer } from './model-tokenizer.js';
import { parseReply } from './reply-markers.js';
import { hermesParser } from './tool-calls/hermes.js';

const CALL_BODY = '\n{"name": "add", "arguments": {"a": 1}}\n';

describe('parseReply', () => {
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
});
