import type { Tool } from '@strands-agents/sdk';
import { describe, expect, test } from 'vitest';
import { ConfigError } from '../errors/index.js';
import { calculatorTool, calculatorTools } from './calculator.js';
import type { EpisodeEnv } from './types.js';

/** Run one call through the tool's stream, as the agent loop does (thrown errors become error results). */
async function call(tool: Tool, input: unknown): Promise<{ status: string; text: string }> {
  const stream = tool.stream({ toolUse: { name: tool.name, toolUseId: 'call_0', input } } as never);
  let step = await stream.next();
  while (!step.done) step = await stream.next();
  return {
    status: step.value.status,
    text: step.value.content.map((block) => ('text' in block ? String(block.text) : '')).join(''),
  };
}

const env: EpisodeEnv = {
  episodeId: 'e0',
  task: { id: 't', prompt: 'p', data: {} },
  state: new Map(),
  signal: new AbortController().signal,
};
const ctx = { recipeDir: '.', warn: () => {} };

describe('calculatorTool', () => {
  test('returns the result as text for a good expression', async () => {
    expect(await call(calculatorTool(), { expression: '12 + 30' })).toStrictEqual({ status: 'success', text: '42' });
  });

  test('returns an error result the model reads for a bad expression', async () => {
    expect(await call(calculatorTool(), { expression: 'process.exit()' })).toStrictEqual({
      status: 'error',
      text: 'Error: unexpected character "p" at position 1; use numbers, + - * / % ** and parentheses',
    });
    expect(await call(calculatorTool(), { expression: '1 / 0' })).toStrictEqual({
      status: 'error',
      text: 'Error: division by zero at position 3',
    });
  });

  test('returns an error result for arguments that miss the schema', async () => {
    const result = await call(calculatorTool(), { expr: '1 + 1' });
    expect(result.status).toBe('error');
    expect(result.text).toMatch(/^Error: .*expression/s);
  });

  test('returns a tool spec with one string argument named expression', () => {
    const spec = calculatorTool().toolSpec;
    expect(spec.name).toBe('calculator');
    expect(spec.inputSchema).toMatchObject({
      type: 'object',
      properties: { expression: { type: 'string' } },
      required: ['expression'],
    });
  });
});

describe('calculatorTools', () => {
  test('returns one shared calculator per episode, honouring max_length', async () => {
    const make = await calculatorTools.create({ max_length: 5 }, ctx);
    const [tool] = make(env);
    expect(make(env)[0]).toBe(tool);
    expect(await call(tool!, { expression: '1 + 1' })).toStrictEqual({ status: 'success', text: '2' });
    expect(await call(tool!, { expression: '1 + 1 + 1' })).toStrictEqual({
      status: 'error',
      text: 'Error: expression longer than 5 characters',
    });
  });

  test('rejects unknown and invalid options with their recipe path', async () => {
    await expect(calculatorTools.create({ precision: 3 }, ctx)).rejects.toThrow(ConfigError);
    await expect(calculatorTools.create({ max_length: -1 }, ctx)).rejects.toThrow(
      /tools\.calculator\.options\.max_length/,
    );
  });
});
