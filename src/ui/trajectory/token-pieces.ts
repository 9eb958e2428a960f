import type { ModelTokenizer } from '../../tokens/index.js';

/**
 * The text of each token, aligned with `ids`. Byte-level BPE splits some characters over several
 * tokens; decoding those alone gives U+FFFD, so such a run is decoded together and its text given to
 * the run's last token (the others get '').
 */
export function tokenPieces(tokenizer: ModelTokenizer, ids: readonly number[]): string[] {
  const pieces = new Array<string>(ids.length).fill('');
  let start = 0;
  for (let i = 0; i < ids.length; i++) {
    const text = tokenizer.decode(ids.slice(start, i + 1));
    // A run that still ends inside a character waits for more tokens (at most 4 bytes of UTF-8).
    if (text.endsWith('\uFFFD') && i - start < 3 && i + 1 < ids.length) continue;
    pieces[i] = text;
    start = i + 1;
  }
  return pieces;
}
