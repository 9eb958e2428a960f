// The tiny models' shared recipe: a byte-level BPE tokenizer (Qwen2's pre-tokenizer regex, so every
// digit is its own token) with the 256 byte symbols, a few merges learnt from rendered transcripts of
// the model's task (so the fixed markup of a tool call costs a few tokens instead of dozens), and the
// ChatML/Hermes special tokens; and a qwen2 config of 4 layers (0.9M parameters at width 128). Weights come from a warm-start
// recipe. Used by make-tiny-arith.ts and make-tiny-helpdesk.ts; deterministic.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { byteLevelBpeTokenizer, byteToUnicode } from '../src/__fixtures__/byte-level-bpe.js';

/** What differs between the tiny models. */
export interface TinyModelSpec {
  /** The model directory; its chat_template.jinja must exist. */
  readonly dir: string;
  readonly template: string;
  /** Rendered transcripts of the model's task, the corpus the merges are learnt from. */
  readonly corpus: Iterable<string>;
  readonly merges: number;
  readonly maxPositions: number;
  /** Width of the model (default 128; the intermediate layer is 3x). */
  readonly hidden?: number;
}

const SPECIALS: readonly [string, boolean][] = [
  ['<|endoftext|>', true],
  ['<|im_start|>', true],
  ['<|im_end|>', true],
  ['<tool_call>', false],
  ['</tool_call>', false],
  ['<tool_response>', false],
  ['</tool_response>', false],
];
// The same pattern for JavaScript, which lacks inline (?i:...) groups.
const CHUNK =
  /'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu;

/** Writes tokenizer.json, tokenizer_config.json, generation_config.json and config.json into `spec.dir`; returns a one-line summary. */
export function writeTinyModel(spec: TinyModelSpec): string {
  const { dir, template } = spec;
  const bytes = byteToUnicode();
  const merges = learnMerges(corpusChunks(spec.corpus, bytes), spec.merges);
  const vocab: Record<string, number> = {};
  for (const [b, c] of bytes.entries()) vocab[c] = b;
  for (const [a, b] of merges) vocab[a + b] ??= Object.keys(vocab).length;
  const firstSpecial = Object.keys(vocab).length;
  const id = (token: string): number => firstSpecial + SPECIALS.findIndex(([t]) => t === token);
  const vocabSize = firstSpecial + SPECIALS.length;
  const write = (name: string, value: unknown): void => {
    writeFileSync(join(dir, name), JSON.stringify(value, null, name === 'tokenizer.json' ? undefined : 2) + '\n');
  };
  write(
    'tokenizer.json',
    byteLevelBpeTokenizer(
      SPECIALS.map(([content, special]) => ({ id: id(content), content, special })),
      vocab,
      merges.map(([a, b]) => `${a} ${b}`),
    ),
  );
  write('tokenizer_config.json', {
    add_bos_token: false,
    add_prefix_space: false,
    added_tokens_decoder: Object.fromEntries(
      SPECIALS.map(([content, special]) => [
        String(id(content)),
        { content, lstrip: false, normalized: false, rstrip: false, single_word: false, special },
      ]),
    ),
    bos_token: null,
    eos_token: '<|im_end|>',
    pad_token: '<|endoftext|>',
    unk_token: null,
    clean_up_tokenization_spaces: false,
    errors: 'replace',
    model_max_length: spec.maxPositions,
    split_special_tokens: false,
    tokenizer_class: 'Qwen2Tokenizer',
    chat_template: template,
  });
  write('generation_config.json', {
    bos_token_id: id('<|endoftext|>'),
    eos_token_id: [id('<|im_end|>'), id('<|endoftext|>')],
    pad_token_id: id('<|endoftext|>'),
    do_sample: true,
    temperature: 1.0,
    top_p: 1.0,
  });
  write('config.json', {
    architectures: ['Qwen2ForCausalLM'],
    model_type: 'qwen2',
    vocab_size: vocabSize,
    hidden_size: spec.hidden ?? 128,
    intermediate_size: 3 * (spec.hidden ?? 128),
    num_hidden_layers: 4,
    num_attention_heads: 4,
    num_key_value_heads: 4,
    hidden_act: 'silu',
    max_position_embeddings: spec.maxPositions,
    rms_norm_eps: 1e-6,
    rope_theta: 10000.0,
    tie_word_embeddings: true,
    attention_dropout: 0.0,
    initializer_range: 0.02,
    use_cache: true,
    use_sliding_window: false,
    sliding_window: null,
    max_window_layers: 4,
    bos_token_id: id('<|endoftext|>'),
    eos_token_id: id('<|im_end|>'),
    pad_token_id: id('<|endoftext|>'),
    torch_dtype: 'float32',
  });
  return `vocab ${vocabSize} (256 bytes + ${firstSpecial - 256} merged + ${SPECIALS.length} specials)`;
}

/** Pre-tokenized chunks (in byte-level symbols) of the corpus, special tokens cut out. */
function corpusChunks(corpus: Iterable<string>, bytes: readonly string[]): Map<string, number> {
  const specials = new RegExp(SPECIALS.map(([t]) => t.replace(/[|]/g, '\\|')).join('|'));
  const counts = new Map<string, number>();
  for (const text of corpus) {
    for (const piece of text.split(specials)) {
      for (const [chunk] of piece.matchAll(CHUNK)) {
        const symbols = [...Buffer.from(chunk, 'utf8')].map((b) => bytes[b]).join('');
        counts.set(symbols, (counts.get(symbols) ?? 0) + 1);
      }
    }
  }
  return counts;
}

/** Classic BPE training: repeatedly merge the most frequent adjacent pair (ties: the smaller pair string). */
function learnMerges(chunks: Map<string, number>, count: number): [string, string][] {
  const words = [...chunks].map(([chunk, n]) => ({ symbols: [...chunk], n }));
  const learnt: [string, string][] = [];
  while (learnt.length < count) {
    const pairs = new Map<string, number>();
    for (const { symbols, n } of words) {
      for (let i = 0; i + 1 < symbols.length; i++) {
        const key = `${symbols[i]}\u0000${symbols[i + 1]}`;
        pairs.set(key, (pairs.get(key) ?? 0) + n);
      }
    }
    const best = [...pairs].sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1))[0];
    if (!best || best[1] < 2) break;
    const [a, b] = best[0].split('\u0000') as [string, string];
    learnt.push([a, b]);
    for (const word of words) {
      const next: string[] = [];
      for (let i = 0; i < word.symbols.length; i++) {
        if (word.symbols[i] === a && word.symbols[i + 1] === b) {
          next.push(a + b);
          i++;
        } else next.push(word.symbols[i]!);
      }
      word.symbols = next;
    }
  }
  return learnt;
}
