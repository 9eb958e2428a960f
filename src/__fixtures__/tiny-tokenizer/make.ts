// Writes the tiny Qwen-style tokenizer fixture beside this file: `npx tsx src/__fixtures__/tiny-tokenizer/make.ts`.
// A byte-level BPE (256 byte tokens + a handful of merges) with the ChatML specials and Qwen's tool and
// think tags, so tests exercise the real @huggingface/tokenizers code paths in a few KB instead of 11 MB.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { byteLevelBpeTokenizer, byteToUnicode } from '../byte-level-bpe.js';

const here = dirname(fileURLToPath(import.meta.url));

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

const tokenizer = byteLevelBpeTokenizer(
  specials.map(([content, special], i) => ({ id: firstSpecialId + i, content, special })),
  vocab,
  merges,
);

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
