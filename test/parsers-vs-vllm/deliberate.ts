// The disagreements with vLLM's parsers that atk keeps on purpose, each recognised by a predicate over the
// output and the two readings, and each described in docs/tool-call-formats.md under its id (the harness checks
// that the page names every id). A disagreement no entry here recognises fails the comparison.
import { isDeepStrictEqual } from 'node:util';
import { coerceToSchemaTypes } from '../../src/tokens/tool-calls/schema-coerce.js';
import type { ParserCase } from './cases.js';

/** What a parser made of an output: the calls it would run; for atk, the kinds of calls it refused. */
export interface Read {
  readonly calls: readonly { readonly name: string; readonly arguments: unknown }[];
  readonly refused?: readonly string[];
  readonly error?: string;
}

/** One documented disagreement; `formats` absent: every format. */
export interface Deliberate {
  readonly id: string;
  readonly formats?: readonly string[];
  readonly applies: (c: ParserCase, atk: Read, vllm: Read) => boolean;
}

/** Whether `shorter`'s calls are the first calls of `longer`'s. */
function prefixOf(shorter: Read, longer: Read): boolean {
  return shorter.calls.every((call, i) => isDeepStrictEqual(call, longer.calls[i]));
}

/** Every string inside a reading's arguments. */
function strings(read: Read): string[] {
  const found: string[] = [];
  const stack: unknown[] = read.calls.map((c) => c.arguments);
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === 'string') found.push(item);
    else if (typeof item === 'object' && item !== null) stack.push(...Object.values(item));
  }
  return found;
}

/** Whether `vllm` is `atk` with some of its strings read as another JSON type (`"null"` as null, `"5"` as 5). */
function stringsRetyped(atk: unknown, vllm: unknown): boolean {
  if (typeof atk === 'string' && typeof vllm !== 'string')
    return isDeepStrictEqual(
      coerceToSchemaTypes(atk, ['null', 'integer', 'number', 'boolean', 'object', 'array']),
      vllm,
    );
  if (typeof atk !== 'object' || atk === null || typeof vllm !== 'object' || vllm === null)
    return isDeepStrictEqual(atk, vllm);
  const keys = Object.keys(atk);
  return (
    Array.isArray(atk) === Array.isArray(vllm) &&
    isDeepStrictEqual(keys, Object.keys(vllm)) &&
    keys.every((k) => stringsRetyped((atk as Record<string, unknown>)[k], (vllm as Record<string, unknown>)[k]))
  );
}

export const DELIBERATE: readonly Deliberate[] = [
  {
    // A reply cut off inside a call (the length limit): atk answers that call with `unterminated` and runs the
    // complete ones before it; vLLM runs what it read of the cut call too (its arguments so far, or a raw string),
    // or, where one bad call voids the reply, nothing.
    id: 'cut-short',
    applies: (_c, atk, vllm) =>
      (atk.refused ?? []).includes('unterminated') && (vllm.calls.length === 0 || prefixOf(atk, vllm)),
  },
  {
    // mistral, kimi_k2: arguments written as JSON. vLLM's engine parsers pass them through the same schema
    // conversion as the formats whose values are text, so a JSON string "null" of a nullable string parameter
    // arrives as null (and "5" as 5 where a number is allowed too); atk keeps the JSON value the model wrote.
    id: 'json-strings-kept-as-written',
    formats: ['mistral', 'kimi_k2'],
    applies: (_c, atk, vllm) =>
      atk.calls.length === vllm.calls.length &&
      atk.calls.every(
        (call, i) => call.name === vllm.calls[i]!.name && stringsRetyped(call.arguments, vllm.calls[i]!.arguments),
      ),
  },
  {
    // One call of the reply does not parse: vLLM's hermes, granite4, llama3_json, pythonic and phi4_mini_json
    // parsers then return the whole reply as text with no call; atk runs the calls that parse and answers the
    // broken one with its error.
    id: 'one-broken-call-voids-the-reply',
    formats: ['hermes', 'granite4', 'llama3_json', 'pythonic', 'phi4_mini_json'],
    applies: (_c, atk, vllm) => vllm.calls.length === 0 && (atk.refused ?? []).length > 0 && atk.calls.length > 0,
  },
  {
    // A value holding the format's own markup (a file being written): atk keeps it in the value where the call's
    // structure shows the tag is not structural; vLLM ends the value (or the call) at the first such tag.
    id: 'markup-inside-a-value',
    formats: ['qwen3_coder', 'seed_oss'],
    applies: (_c, atk) =>
      strings(atk).some((s) => /<\/parameter>|<parameter=|<\/function>|<function=|<\/?(seed:)?tool_call>/.test(s)),
  },
  {
    // qwen3_coder, seed_oss: a `<function=` written without the call tag. vLLM reads it as a call; atk takes a call
    // only inside the call tag, a token the model generates, so text that spells a call out (an answer about the
    // format) is no call.
    id: 'function-without-its-call-tag',
    formats: ['qwen3_coder', 'seed_oss'],
    applies: (c, atk, vllm) =>
      vllm.calls.length > atk.calls.length && (atk.refused ?? []).length === 0 && c.text.includes('<function='),
  },
  {
    // pythonic: text before or after the list of calls. atk reads a list that opens a line and keeps the rest as
    // text; vLLM's parser reads calls only when the whole reply is the list.
    id: 'pythonic-text-around-the-list',
    formats: ['pythonic'],
    applies: (c, atk, vllm) => vllm.calls.length === 0 && atk.calls.length > 0 && !/^\s*\[[\s\S]*\]\s*$/.test(c.text),
  },
  {
    // phi4_mini_json: vLLM's pattern `functools\[(.*?)\]` stops at the first `]`, so a list whose calls hold an
    // array or a `]` in a string is no JSON to it; atk reads the list to its matching bracket.
    id: 'phi4-list-holding-a-bracket',
    formats: ['phi4_mini_json'],
    applies: (c, atk, vllm) =>
      vllm.calls.length === 0 && atk.calls.length > 0 && /functools\[[^\]]*\][\s\S]*\]/.test(c.text),
  },
];
