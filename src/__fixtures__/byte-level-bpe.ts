// The tokenizer.json of a tiny Qwen2-style byte-level BPE, shared by the two scripts that write one:
// the tiny tokenizer fixture (src/__fixtures__/tiny-tokenizer/make.ts) and the tiny arith model
// (scripts/make-tiny-arith.ts). Both must load in @huggingface/tokenizers exactly as Qwen2's does.

/** Qwen2's pre-tokenizer split: every digit is its own chunk. */
export const QWEN2_PRE_TOKENIZER_REGEX =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/** GPT-2's reversible byte -> printable unicode mapping that byte-level BPE vocabularies are written in. */
export function byteToUnicode(): string[] {
  const printable = (b: number): boolean =>
    (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  let extra = 0;
  return Array.from({ length: 256 }, (_, b) => String.fromCodePoint(printable(b) ? b : 256 + extra++));
}

/** An added token: its id, its text, and whether decoding with skip_special_tokens drops it. */
export interface AddedToken {
  readonly id: number;
  readonly content: string;
  readonly special: boolean;
}

/**
 * The tokenizer.json object: NFC, Qwen2's split then byte-level pre-tokenization, BPE over `vocab`
 * with `merges` (written as given: `"a b"` strings or `[a, b]` pairs, both of which tokenizers reads).
 */
export function byteLevelBpeTokenizer(
  addedTokens: readonly AddedToken[],
  vocab: Readonly<Record<string, number>>,
  merges: readonly string[] | readonly (readonly [string, string])[],
): object {
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: addedTokens.map(({ id, content, special }) => ({
      id,
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
        { type: 'Split', pattern: { Regex: QWEN2_PRE_TOKENIZER_REGEX }, behavior: 'Isolated', invert: false },
        byteLevel,
      ],
    },
    post_processor: byteLevel,
    decoder: byteLevel,
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
}
