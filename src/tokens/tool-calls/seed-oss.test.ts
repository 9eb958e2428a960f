import { describe, expect, test } from 'vitest';
import type { ChatTool } from '../chat-types.js';
import { seedOssParser } from './qwen3-coder.js';

const tools: ChatTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: '',
      parameters: { type: 'object', properties: { location: { type: 'string' }, days: { type: 'integer' } } },
    },
  },
];
const parse = (text: string) => seedOssParser.parse(text, { tools });

describe('seedOssParser', () => {
  test('returns the calls after the reasoning block, values on the call line typed by the schema', () => {
    // The layout of vLLM's own Seed-OSS parser tests (tests/tool_parsers/test_seed_oss_tool_parser.py).
    const raw =
      '<seed:tool_call>\n<function=get_weather>\n<parameter=location>Barcelona, Spain</parameter>\n<parameter=days>3</parameter>\n</function>\n</seed:tool_call>';
    expect(parse(`<seed:think>The user wants the weather.</seed:think>Checking.\n${raw}`)).toStrictEqual({
      reasoning: 'The user wants the weather.',
      text: 'Checking.',
      calls: [{ ok: true, name: 'get_weather', arguments: { location: 'Barcelona, Spain', days: 3 }, raw }],
    });
  });

  test("returns Qwen3-Coder's <tool_call> as text: Seed-OSS calls stand in its own markers", () => {
    const text = '<tool_call>\n<function=get_weather>\n<parameter=location>x</parameter>\n</function>\n</tool_call>';
    expect(parse(text)).toStrictEqual({ reasoning: '', text, calls: [] });
  });

  test('returns the calls renderCalls writes, values on the call line as the Seed-OSS template writes them', () => {
    const calls = [{ name: 'get_weather', arguments: { location: 'Paris\nFrance', days: 2 } }];
    const rendered = seedOssParser.renderCalls(calls);
    expect(rendered).toBe(
      '<seed:tool_call>\n<function=get_weather>\n<parameter=location>Paris\nFrance</parameter>\n<parameter=days>2</parameter>\n</function>\n</seed:tool_call>',
    );
    expect(parse(rendered).calls.map((c) => c.ok && [c.name, c.arguments])).toStrictEqual([
      ['get_weather', { location: 'Paris\nFrance', days: 2 }],
    ]);
  });
});
