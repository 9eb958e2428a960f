import type { ModelTokenizer } from './model-tokenizer.js';
import type { ParsedTurn, ToolCallParseContext, ToolCallParser } from './tool-calls/types.js';

/**
 * Parses a model reply so that a marker the tokenizer holds as one added token (`<tool_call>` in Qwen,
 * `<|python_tag|>` in Llama 3, `[TOOL_CALLS]` in Mistral, `<|call|>` in gpt-oss) counts only where the
 * model generated that token's id: the same characters spelled out of ordinary sub-word tokens are text,
 * as they are to the model. The parsers keep matching text; such a spelled-out marker is broken with a
 * private-use character before parsing, and that character is taken out of everything parsed again, so
 * the reply's text, calls and reasoning read exactly as decoded.
 * @param ids The reply's tokens that `text` was decoded from (without the final stop token).
 * @param text `tokenizer.decode(ids)`, or a prefix of it (a reply cut at a stop string).
 */
export function parseReply(
  tokenizer: ModelTokenizer,
  parser: ToolCallParser,
  ids: readonly number[],
  text: string,
  context?: ToolCallParseContext,
): ParsedTurn {
  const markers = markersOf(tokenizer);
  const spelled = spelledOutMarkers(tokenizer, markers, ids, text);
  if (spelled === undefined) return parser.parse(text, context);
  const sentinel = unusedCharacter(spelled.text);
  let broken = '';
  let from = 0;
  for (const at of spelled.starts) {
    broken += `${spelled.text.slice(from, at + 1)}${sentinel}`;
    from = at + 1;
  }
  broken += spelled.text.slice(from);
  return withoutCharacter(parser.parse(broken, context), sentinel);
}

/** A tokenizer's added tokens that read as markup, by their first character; longest first. */
interface Markers {
  readonly byFirstChar: ReadonlyMap<string, readonly string[]>;
  readonly ids: ReadonlyMap<number, string>;
  readonly firstChars: RegExp;
}

const markerCache = new WeakMap<ModelTokenizer, Markers>();

/**
 * Added tokens that look like markup (no whitespace, at least 3 characters, a bracket, bar or angle
 * bracket in them): tokenizers also add plain words or runs of spaces, which are ordinary text however
 * they were tokenised.
 */
function markersOf(tokenizer: ModelTokenizer): Markers {
  const cached = markerCache.get(tokenizer);
  if (cached) return cached;
  const byFirstChar = new Map<string, string[]>();
  const ids = new Map<number, string>();
  for (const [content, id] of tokenizer.addedTokens) {
    if (content.length < 3 || /\s/.test(content) || !/[<>[\]|｜]/.test(content)) continue;
    ids.set(id, content);
    const first = content[0]!;
    byFirstChar.set(first, [...(byFirstChar.get(first) ?? []), content]);
  }
  for (const list of byFirstChar.values()) list.sort((a, b) => b.length - a.length);
  const chars = [...byFirstChar.keys()].map((c) => c.replace(/[\\\]^-]/g, '\\$&')).join('');
  const markers = { byFirstChar, ids, firstChars: new RegExp(chars === '' ? '[^\\s\\S]' : `[${chars}]`, 'gu') };
  markerCache.set(tokenizer, markers);
  return markers;
}

/**
 * Where the text holds a marker the model did not generate as its token, or undefined when every
 * marker in it was generated (the usual case). The positions are found by decoding the runs between
 * generated markers on their own; for byte-level vocabularies that is the same text, and where a
 * decoder joins runs differently the text so decoded is parsed instead.
 */
function spelledOutMarkers(
  tokenizer: ModelTokenizer,
  markers: Markers,
  ids: readonly number[],
  text: string,
): { text: string; starts: number[] } | undefined {
  // No shortcut by counting markers in the text against generated ones: a text cut at a stop string
  // leaves generated markers past the cut, which would vouch for one spelled out before it.
  if (markerOccurrences(markers, text).length === 0) return undefined;
  const pieces: string[] = [];
  const generatedAt = new Set<number>();
  let length = 0;
  let run: number[] = [];
  const flush = (): void => {
    if (run.length === 0) return;
    const piece = tokenizer.decode(run);
    pieces.push(piece);
    length += piece.length;
    run = [];
  };
  for (const id of ids) {
    const content = markers.ids.get(id);
    if (content === undefined) {
      run.push(id);
      continue;
    }
    flush();
    generatedAt.add(length);
    pieces.push(content);
    length += content.length;
  }
  flush();
  const pieced = pieces.join('');
  const source = pieced.startsWith(text) ? text : pieced;
  const starts = markerOccurrences(markers, source)
    .filter((o) => !generatedAt.has(o.at))
    .map((o) => o.at);
  return starts.length === 0 ? undefined : { text: source, starts };
}

/** Every marker in the text, left to right, the longest where two start at one place. */
function markerOccurrences(markers: Markers, text: string): { at: number; content: string }[] {
  const found: { at: number; content: string }[] = [];
  markers.firstChars.lastIndex = 0;
  for (let match = markers.firstChars.exec(text); match !== null; match = markers.firstChars.exec(text)) {
    const content = markers.byFirstChar.get(match[0])?.find((m) => text.startsWith(m, match!.index));
    if (content === undefined) continue;
    found.push({ at: match.index, content });
    markers.firstChars.lastIndex = match.index + content.length;
  }
  return found;
}

/** A private-use character the text does not hold. */
function unusedCharacter(text: string): string {
  for (let code = 0xe000; ; code++) {
    const c = String.fromCharCode(code);
    if (!text.includes(c)) return c;
  }
}

function withoutCharacter(turn: ParsedTurn, c: string): ParsedTurn {
  return strip(turn, c) as ParsedTurn;
}

function strip(value: unknown, c: string): unknown {
  if (typeof value === 'string') return value.split(c).join('');
  if (Array.isArray(value)) return value.map((v) => strip(v, c));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [strip(k, c) as string, strip(v, c)]));
  }
  return value;
}
