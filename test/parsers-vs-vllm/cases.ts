// The model outputs both parsers read: each format's corpus (test/parsers-vs-vllm/corpus/<format>.json: outputs
// from vLLM's own parser tests and the cases atk's parser tests pin) and outputs generated here with fast-check
// from a fixed seed: the format's own rendering of random calls (nested values, unicode, escapes, the format's
// markers inside values, numbers-as-text), several per reply, text around them, and replies cut short.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import type { ChatTool } from '../../src/tokens/chat-types.js';
import { toolCallParsers } from '../../src/tokens/tool-calls/index.js';
import type { ToolCallToRender } from '../../src/tokens/tool-calls/types.js';
import { type ComparedFormat, TOOLS } from './formats.js';

/** The origin of the outputs cut short at a random point. */
export const CUT = 'generated: cut short';

/** One model output to read. */
export interface ParserCase {
  readonly id: string;
  readonly format: string;
  readonly text: string;
  readonly tools: readonly ChatTool[];
  /** Where it comes from: `corpus: <source>` or `generated: <kind>`. */
  readonly origin: string;
}

/** A corpus entry: the text, the tools offered (default: TOOLS; `none`: no tools), and its source. */
interface CorpusEntry {
  readonly text: string;
  readonly tools?: 'none' | readonly ChatTool[];
  readonly from: string;
}

const CORPUS_DIR = join(import.meta.dirname, 'corpus');

/** Every case of `format`: its corpus, then `generated` rendered replies and `generated / 4` cut short. */
export function casesOf(format: ComparedFormat, generated: number, seed: number): ParserCase[] {
  const file = join(CORPUS_DIR, `${format.atk}.json`);
  const corpus = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as CorpusEntry[]) : [];
  const cases: ParserCase[] = corpus.map((entry, i) => ({
    id: `${format.atk}/corpus/${i}`,
    format: format.atk,
    text: entry.text,
    tools: entry.tools === 'none' ? [] : (entry.tools ?? TOOLS),
    origin: `corpus: ${entry.from}`,
  }));
  const render = toolCallParsers[format.atk]!.renderCalls;
  const markers = format.literals ?? [];
  const replies = fc.sample(reply(markers, format), { seed, numRuns: generated });
  replies.forEach((r, i) => {
    const text = r.before + render(r.calls) + r.after;
    cases.push({
      id: `${format.atk}/generated/${i}`,
      format: format.atk,
      text,
      tools: TOOLS,
      origin: `generated: ${r.kind}`,
    });
  });
  const cuts = fc.sample(fc.tuple(reply(markers, format), fc.double({ min: 0.05, max: 0.95, noNaN: true })), {
    seed: seed + 1,
    numRuns: Math.ceil(generated / 4),
  });
  cuts.forEach(([r, at], i) => {
    const text = r.before + render(r.calls);
    cases.push({
      id: `${format.atk}/cut/${i}`,
      format: format.atk,
      text: cutAt(text, Math.max(1, Math.floor(text.length * at))),
      tools: TOOLS,
      origin: CUT,
    });
  });
  return cases;
}

/** The text up to `at`, moved back off the middle of a surrogate pair (a model's output is whole characters). */
function cutAt(text: string, at: number): string {
  const code = text.charCodeAt(at - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? at - 1 : at);
}

interface Reply {
  readonly calls: ToolCallToRender[];
  readonly before: string;
  readonly after: string;
  readonly kind: string;
}

/** A reply: one to three calls (one where the format allows no more), maybe with text before or after. */
function reply(markers: readonly string[], format: ComparedFormat): fc.Arbitrary<Reply> {
  const { parallel, textAround = true } = format;
  const words = fc.string({ unit: fc.constantFrom(...'abc xyz,.\n'.split('')), maxLength: textAround ? 20 : 0 });
  return fc
    .record({
      calls: fc.array(call(markers), { minLength: 1, maxLength: parallel ? 3 : 1 }),
      before: fc.oneof({ weight: 3, arbitrary: fc.constant('') }, words),
      after: fc.oneof({ weight: 3, arbitrary: fc.constant('') }, words),
    })
    .map((r) => ({
      ...r,
      kind: `${r.calls.length} call(s)${r.before || r.after ? ', text around' : ''}${hasMarker(r.calls, markers) ? ', a marker inside a value' : ''}`,
    }));
}

function hasMarker(calls: readonly ToolCallToRender[], markers: readonly string[]): boolean {
  const text = JSON.stringify(calls.map((c) => c.arguments));
  return markers.some((m) => text.includes(m.replace(/"/g, '\\"')));
}

function call(markers: readonly string[]): fc.Arbitrary<ToolCallToRender> {
  const text = stringValue(markers);
  const json = fc.jsonValue({ maxDepth: 3 }).filter((v) => !Object.is(v, -0));
  return fc.oneof(
    fc
      .record(
        {
          path: text,
          content: text,
          append: fc.boolean(),
          mode: fc.integer({ min: -1000, max: 1_000_000 }),
        },
        { requiredKeys: ['path', 'content'] },
      )
      .map((a) => ({ name: 'write_file', arguments: a })),
    fc
      .record(
        {
          query: text,
          limit: fc.integer({ min: 0, max: 500 }),
          score: fc
            .double({ min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true })
            .filter((v) => !Object.is(v, -0)),
          filters: fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), json, { maxKeys: 3 }),
          tags: fc.array(text, { maxLength: 3 }),
          note: fc.option(text, { nil: null }),
        },
        { requiredKeys: ['query'] },
      )
      .map((a) => ({ name: 'search', arguments: a })),
    fc.constant({ name: 'ping', arguments: {} }),
  );
}

/** Strings a model writes as values: prose, unicode, quotes and escapes, line breaks, text that looks like another type, markup. */
function stringValue(markers: readonly string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.string({ maxLength: 30 }) },
    { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }) },
    { weight: 2, arbitrary: fc.string({ unit: fc.constantFrom(...'a"\\\n\t {}[]\'/'.split('')), maxLength: 16 }) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '5',
        '-3.5',
        'null',
        'None',
        'true',
        'false',
        '[1, 2]',
        '{"a": 1}',
        '  padded  ',
        '\nline\n',
      ),
    },
    {
      weight: markers.length > 0 ? 1 : 0,
      arbitrary: fc
        .tuple(
          fc.string({ maxLength: 8 }),
          fc.constantFrom(...(markers.length > 0 ? markers : ['<x>'])),
          fc.string({ maxLength: 8 }),
        )
        .map(([a, m, b]) => a + m + b),
    },
  );
}
