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

  /** The parts of a BPE tokenizer.json the tests edit. */
  interface TokenizerJson {
    model: { type?: string; vocab: Record<string, number> | [string, number][]; merges?: unknown[] };
    added_tokens: { content: string }[];
  }
  /** Rewrites `file` in `dir` (JSON) with `edit`. */
  const editJson = <T = TokenizerJson>(dir: string, file: string, edit: (json: T) => void): void => {
    const json = JSON.parse(readFileSync(join(dir, file), 'utf8')) as T;
    edit(json);
    writeFileSync(join(dir, file), JSON.stringify(json));
  };

  test('names the student directory without a tokenizer', async () => {
    const student = copy();
    rmSync(join(student, 'tokenizer.json'));
    expect(await tokenizerMismatch(student, TINY)).toBe(`no tokenizer.json in ${student}`);
  });

  test('names both vocabulary sizes when the teacher has one token more', async () => {
    const other = copy();
    editJson(other, 'tokenizer.json', (json) => {
      json.model.vocab = { ...json.model.vocab, Ġatk: 10_000 };
    });
    expect(await tokenizerMismatch(TINY, other)).toBe(
      `the vocabularies differ (352 tokens in ${TINY}, 353 in ${other}, or the same ids name other tokens)`,
    );
  });

  test('returns undefined for the same vocabulary listed in another order', async () => {
    const other = copy();
    editJson(other, 'tokenizer.json', (json) => {
      json.model.vocab = Object.fromEntries(Object.entries(json.model.vocab).reverse());
    });
    expect(await tokenizerMismatch(TINY, other)).toBeUndefined();
  });

  test('names the vocabulary when an added token has other text (Llama 3 and 3.1 name reserved tokens differently)', async () => {
    const other = copy();
    editJson(other, 'tokenizer.json', (json) => {
      json.added_tokens.at(-1)!.content = '<|python_tag|>';
    });
    expect(await tokenizerMismatch(TINY, other)).toMatch(/^the vocabularies differ \(352 tokens in .*, 352 in /);
  });

  test('names the vocabulary when the merges differ', async () => {
    const other = copy();
    editJson(other, 'tokenizer.json', (json) => {
      json.model.merges!.pop();
    });
    expect(await tokenizerMismatch(TINY, other)).toMatch(/^the vocabularies differ \(352 tokens in .*, 352 in /);
  });

  test('compares a Unigram vocabulary (a list of pieces and scores) piece by piece', async () => {
    const [student, teacher] = [copy(), copy()];
    const unigram =
      (rename: string) =>
      (json: TokenizerJson): void => {
        const pieces = Object.keys(json.model.vocab).map((piece): [string, number] => [piece, -1]);
        pieces[5]![0] = rename;
        json.model = { type: 'Unigram', vocab: pieces };
      };
    editJson(student, 'tokenizer.json', unigram('▁a'));
    editJson(teacher, 'tokenizer.json', unigram('▁b'));
    expect(await tokenizerMismatch(student, teacher)).toBe(
      `the vocabularies differ (352 tokens in ${student}, 352 in ${teacher}, or the same ids name other tokens)`,
    );
    cpSync(join(student, 'tokenizer.json'), join(teacher, 'tokenizer.json'));
    expect(await tokenizerMismatch(student, teacher)).toBeUndefined();
  });

  test("reads tokenizer_config.json's chat template before chat_template.jinja", async () => {
    const other = copy();
    editJson<Record<string, unknown>>(other, 'tokenizer_config.json', (json) => {
      json.chat_template = '{{ messages }}';
    });
    expect(await tokenizerMismatch(TINY, other)).toBe(
      `the chat templates differ (${TINY} and ${other} render conversations differently)`,
    );
  });

  test('compares chat_template.jinja where neither directory has tokenizer_config.json', async () => {
    const [student, teacher] = [copy(), copy()];
    for (const dir of [student, teacher]) rmSync(join(dir, 'tokenizer_config.json'));
    expect(await tokenizerMismatch(student, teacher)).toBeUndefined();
    writeFileSync(join(teacher, 'chat_template.jinja'), '{{ messages }}');
    expect(await tokenizerMismatch(student, teacher)).toMatch(/^the chat templates differ/);
  });
});
