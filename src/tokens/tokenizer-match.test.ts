import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { projectRoot } from '../util/paths.js';
import { tokenizerMismatch } from './tokenizer-match.js';

const TINY = join(projectRoot(), 'models', 'tiny-arith');

describe('tokenizerMismatch', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const copy = (): string => {
    const dir = mkdtempSync(join(tmpdir(), 'atk-tok-'));
    dirs.push(dir);
    cpSync(TINY, dir, { recursive: true });
    return dir;
  };

  test('returns undefined for a copy of the same model directory', async () => {
    expect(await tokenizerMismatch(TINY, copy())).toBeUndefined();
  });

  test('names the vocabulary when one id names another token', async () => {
    const other = copy();
    const file = join(other, 'tokenizer.json');
    const json = JSON.parse(readFileSync(file, 'utf8')) as { model: { vocab: Record<string, number> } };
    const [a, b] = Object.keys(json.model.vocab);
    [json.model.vocab[a!], json.model.vocab[b!]] = [json.model.vocab[b!]!, json.model.vocab[a!]!];
    writeFileSync(file, JSON.stringify(json));
    expect(await tokenizerMismatch(TINY, other)).toMatch(/^the vocabularies differ/);
  });

  test('names the chat template when it differs', async () => {
    const other = copy();
    writeFileSync(join(other, 'chat_template.jinja'), '{{ messages }}');
    const config = JSON.parse(readFileSync(join(other, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
    delete config.chat_template;
    writeFileSync(join(other, 'tokenizer_config.json'), JSON.stringify(config));
    expect(await tokenizerMismatch(TINY, other)).toMatch(/^the chat templates differ/);
  });

  test('names the teacher directory without a tokenizer (a raw checkpoint)', async () => {
    const other = copy();
    rmSync(join(other, 'tokenizer.json'));
    expect(await tokenizerMismatch(TINY, other)).toBe(`no tokenizer.json in ${other}`);
  });
});
