// Writes the tiny Qwen-style tokenizer fixture beside this file: `npx tsx src/__fixtures__/tiny-tokenizer/make.ts`.
// A byte-level BPE (256 byte tokens + a handful of merges) with the ChatML specials and Qwen's tool and
// think tags, so tests exercise the real @huggingface/tokenizers code paths in a few KB instead of 11 MB.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** GPT-2's reversible byte -> printable unicode mapping that byte-level BPE vocabularies are written in. */
function byteToUnicode(): string[] {
  const printable: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b);
  for (let b = 0xae; b <= 0xff; b++) printable.push(b);
  const chars: string[] = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    chars[b] = printable.includes(b) ? String.fromCodePoint(b) : String.fromCodePoint(256 + extra++);
  }
  return chars;
}

// Merges chosen so common prompt words become multi-byte tokens and tests can plant non-canonical splits.
const merges: [string, string][] = [
  ['Ġ', 't'],
  ['h', 'e'],
  ['Ġt', 'he'],
  ['i', 'n'],
  ['e', 'r'],
  ['o', 'n'],
  ['a', 'r'],
  ['s', 't'],
  ['Ġ', 'a'],
  ['u', 'm'],
  ['"', ':'],
  ['n', 'a'],
  ['na', 'm'],
  ['nam', 'e'],
  ['Ġ', 'i'],
  ['Ġi', 's'],
];

const specials: [string, boolean][] = [
  ['<|endoftext|>', true],
  ['<|im_start|>', true],
  ['<|im_end|>', true],
  ['<tool_call>', false],
  ['</tool_call>', false],
  ['<tool_response>', false],
  ['</tool_response>', false],
  ['<think>', false],
  ['</think>', false],
];
const firstSpecialId = 300;

const vocab: Record<string, number> = {};
for (const [b, c] of byteToUnicode().entries()) vocab[c] = b;
for (const [i, [a, b]] of merges.entries()) vocab[a + b] = 256 + i;

const tokenizer = {
  version: '1.0',
  truncation: null,
  padding: null,
  added_tokens: specials.map(([content, special], i) => ({
    id: firstSpecialId + i,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special,
  })),
  normalizer: { type: 'NFC' },
  pre_tokenizer: {
    type: 'Sequence',
    pretokenizers: [
      {
        type: 'Split',
        pattern: {
          Regex:
            "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
        },
        behavior: 'Isolated',
        invert: false,
      },
      { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    ],
  },
  post_processor: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
  decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
  model: {
    type: 'BPE',
    dropout: null,
    unk_token: null,
    continuing_subword_prefix: '',
    end_of_word_suffix: '',
    fuse_unk: false,
    byte_fallback: false,
    ignore_merges: false,
    vocab,
    merges,
  },
};

const config = {
  add_bos_token: false,
  bos_token: null,
  eos_token: '<|im_end|>',
  pad_token: '<|endoftext|>',
  clean_up_tokenization_spaces: false,
  model_max_length: 4096,
  tokenizer_class: 'Qwen2Tokenizer',
  chat_template: readFileSync(join(here, 'chat_template.jinja'), 'utf8'),
};

writeFileSync(join(here, 'tokenizer.json'), JSON.stringify(tokenizer) + '\n');
writeFileSync(join(here, 'tokenizer_config.json'), JSON.stringify(config, null, 2) + '\n');
writeFileSync(
  join(here, 'generation_config.json'),
  JSON.stringify({ eos_token_id: [firstSpecialId + 2, firstSpecialId] }, null, 2) + '\n',
);
