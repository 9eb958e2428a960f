/**
 * The yaml package's parse errors as one-line issues in plain words. An unclosed quote or
 * bracket is reported where it opens (the parser only notices at the end of the file, and every
 * later error is a consequence of it).
 */
import { CST, Lexer, type YAMLError } from 'yaml';
import type { ConfigIssue } from '../errors/index.js';
import type { SourceLocation } from './located.js';

/** Issues for a document's parse errors. */
export function syntaxIssues(
  errors: readonly YAMLError[],
  text: string,
  at: (offset: number) => SourceLocation,
): ConfigIssue[] {
  if (errors.length === 0) return [];
  const opener = unclosedOpener(text);
  const kept = opener ? errors.filter((e) => e.pos[0] < opener.offset) : errors;
  const issues = kept.map((error) => ({ ...at(error.pos[0]), path: '', message: wording(error, text) }));
  if (opener) issues.push({ ...at(opener.offset), path: '', message: `YAML syntax: ${opener.what}` });
  return issues;
}

function wording(error: YAMLError, text: string): string {
  switch (error.code) {
    case 'TAB_AS_INDENT':
      return 'tab used for indentation; YAML indents with spaces';
    case 'DUPLICATE_KEY':
      return `duplicate key '${/^\s*("[^"]*"|'[^']*'|[^:\n]*?)\s*:/.exec(text.slice(error.pos[0]))?.[1] ?? text.slice(error.pos[0], error.pos[1])}'`;
    case 'MULTIPLE_DOCS':
      return 'more than one YAML document (---); a recipe is one document';
    default: {
      const first = error.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
      return `YAML syntax: ${first.charAt(0).toLowerCase()}${first.slice(1)}`;
    }
  }
}

/** Lexer marker tokens that stand for no source characters. */
const MARKERS = new Set(['\u0002', '\u0018', '\u001f']);

const CLOSERS: Readonly<Record<string, string>> = { '[': ']', '{': '}' };

/** The first quote or flow bracket that is never closed, found with the yaml lexer. */
function unclosedOpener(text: string): { offset: number; what: string } | undefined {
  const open: { offset: number; char: string }[] = [];
  let offset = 0;
  for (const token of new Lexer().lex(text)) {
    const type = CST.tokenType(token);
    if (type === 'double-quoted-scalar' || type === 'single-quoted-scalar') {
      const quote = token[0]!;
      const closed =
        token.length > 1 && token.endsWith(quote) && !(quote === '"' && /(^|[^\\])(\\\\)*\\"$/.test(token));
      if (!closed) return { offset, what: `${quote === '"' ? 'double' : 'single'} quote is never closed` };
    } else if (type === 'flow-seq-start' || type === 'flow-map-start') {
      open.push({ offset, char: token });
    } else if (type === 'flow-seq-end' || type === 'flow-map-end') {
      const top = open.pop();
      if (top && CLOSERS[top.char] !== token) return neverClosed(top);
    } else if (type === 'flow-error-end' && open.length > 0) {
      return neverClosed(open[0]!);
    }
    if (!MARKERS.has(token)) offset += token.length;
  }
  return open.length > 0 ? neverClosed(open[0]!) : undefined;
}

function neverClosed(opener: { offset: number; char: string }): { offset: number; what: string } {
  return { offset: opener.offset, what: `'${opener.char}' is never closed with '${CLOSERS[opener.char]}'` };
}
