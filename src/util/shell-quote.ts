/** A word as bash reads it back: as written where it is plainly safe, else single-quoted. */
export function shellQuote(word: string): string {
  return /^[\w@%+=:,./~-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** A command as one shell line, for printing and for scripts. */
export function shellLine(words: readonly string[]): string {
  return words.map(shellQuote).join(' ');
}
