// fast-check generators of what a policy may write at its worst: tag soup, tool calls nested
// thousands deep, huge strings, invalid JSON escapes, lone surrogates, <think>/<tool_call>
// interleavings and raw token ids that decode to anything. Shared by the model-output fuzz tests.
import fc from 'fast-check';

const TAGS = ['<think>', '</think>', '<tool_call>', '</tool_call>', '<tool_response>', '</tool_response>', '\n', ' '];
const NAMES = ['add', 'calculator', '', 'invalid_tool_call', '</think>', '<tool_call>', 'a"b', '\\u0000'];

/** A JSON-ish value: valid, or broken in one of the ways models break JSON. */
const jsonish: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '1',
    '-0.5e400',
    'null',
    'true',
    '""',
    '{}',
    '[]',
    '{"a": 2, "b": 3}',
    '{"a": 2,}',
    '{a: 1}',
    "{'a': 1}",
    '"\\x41"',
    '"\\u12"',
    '"\\',
    '"\uD800"',
    '"\uDFFF"',
    'NaN',
    '1e99999',
  ),
  fc.integer({ min: 1, max: 6000 }).map((depth) => `${'['.repeat(depth)}${']'.repeat(depth)}`),
  fc.integer({ min: 1, max: 3000 }).map((depth) => `${'{"a": '.repeat(depth)}1${'}'.repeat(depth)}`),
  fc.integer({ min: 1, max: 4000 }).map((depth) => '['.repeat(depth)),
  fc.integer({ min: 0, max: 20_000 }).map((n) => JSON.stringify('x'.repeat(n))),
  fc.string({ unit: 'binary', maxLength: 40 }).map((s) => JSON.stringify(s)),
  fc.string({ unit: 'binary', maxLength: 40 }),
);

/** One `<tool_call>` block, well-formed or not. */
const toolCall: fc.Arbitrary<string> = fc
  .record({
    name: fc.oneof(
      fc.constantFrom(...NAMES),
      fc.integer({ min: 0, max: 20_000 }).map((n) => 'n'.repeat(n)),
    ),
    // Mostly an object around the fragment: that is what reaches argument validation and serialisation.
    args: fc.oneof(
      { weight: 1, arbitrary: jsonish },
      { weight: 3, arbitrary: jsonish.map((value) => `{"a": ${value}}`) },
    ),
    open: fc.constantFrom('<tool_call>\n', '<tool_call>\n', '<tool_call>', ''),
    close: fc.constantFrom('\n</tool_call>', '\n</tool_call>', '</tool_call>', '', '</think>'),
  })
  .map(({ name, args, open, close }) => `${open}{"name": ${JSON.stringify(name)}, "arguments": ${args}}${close}`);

/** A completion as text: a sequence of tags, calls, JSON fragments and arbitrary characters. */
export const adversarialText: fc.Arbitrary<string> = fc
  .array(
    fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(...TAGS) },
      { weight: 3, arbitrary: toolCall },
      { weight: 1, arbitrary: jsonish },
      { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 30 }) },
    ),
    { maxLength: 12 },
  )
  .map((parts) => parts.join(''));

/** A completion as token ids: encoded text, random ids, or text with random ids spliced in. */
export function adversarialIds(encode: (text: string) => number[], maxId: number): fc.Arbitrary<number[]> {
  const randomIds = fc.array(fc.integer({ min: 0, max: maxId }), { maxLength: 200 });
  return fc.oneof(
    adversarialText.map(encode),
    randomIds,
    fc.tuple(adversarialText, randomIds, adversarialText).map(([a, ids, b]) => [...encode(a), ...ids, ...encode(b)]),
  );
}
