import {
  JsonBlock,
  TextBlock,
  Tool,
  tool,
  ToolResultBlock,
  type ToolContext,
  type ToolStreamGenerator,
} from '@strands-agents/sdk';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { runStrandsTool } from '../domains/tau2/tools/common.js';
import { guardTool } from './guard.js';

/** A hand-written Tool subclass (no FunctionTool safety net), driven by `body`. */
class RawTool extends Tool {
  readonly name = 'raw';
  readonly description = 'raw tool';
  readonly toolSpec = {
    name: 'raw',
    description: 'raw tool',
    inputSchema: { type: 'object' as const, properties: {} },
  };
  seenSignal: AbortSignal | undefined;
  constructor(private readonly body: (toolUseId: string) => Promise<ToolResultBlock>) {
    super();
  }
  // biome-ignore lint/correctness/useYield: a tool that never answers, to test the timeout
  async *stream(context: ToolContext): ToolStreamGenerator {
    this.seenSignal = context.cancelSignal;
    return this.body(context.toolUse.toolUseId);
  }
}

describe('guardTool', () => {
  it('returns the result of a well-behaved tool unchanged', async () => {
    const add = tool({
      name: 'add',
      description: 'Add',
      inputSchema: z.object({ a: z.number(), b: z.number() }),
      callback: ({ a, b }) => a + b,
    });
    expect(await runStrandsTool(guardTool(add, 1000), { a: 2, b: 3 })).toStrictEqual({
      status: 'success',
      output: '5',
    });
    expect(guardTool(add, 1000).toolSpec).toStrictEqual(add.toolSpec);
  });

  it('returns an error result when a tool throws', async () => {
    const raw = new RawTool(async () => {
      throw new Error('database is down');
    });
    expect(await runStrandsTool(guardTool(raw, 1000), {})).toStrictEqual({
      status: 'error',
      output: 'Error: database is down',
    });
  });

  it('returns an error result when a tool runs past its timeout, and aborts its signal', async () => {
    const raw = new RawTool(() => new Promise(() => undefined));
    expect(await runStrandsTool(guardTool(raw, 50), {})).toStrictEqual({
      status: 'error',
      output: "Error: tool 'raw' timed out after 0.05 s",
    });
    expect(raw.seenSignal?.aborted).toBe(true);
  });

  it('returns an error result for a result that cannot be serialised or is not a tool result', async () => {
    const bigint = new RawTool(
      async (toolUseId) =>
        new ToolResultBlock({ toolUseId, status: 'success', content: [new JsonBlock({ json: { n: 1n } as never })] }),
    );
    const out = await runStrandsTool(guardTool(bigint, 1000), {});
    expect(out.status).toBe('error');
    expect(out.output).toMatch(/^Error: tool 'raw' returned a result that cannot be serialised \(.*BigInt/);
    const nothing = new RawTool(async () => ({ text: 'hi' }) as never);
    expect(await runStrandsTool(guardTool(nothing, 1000), {})).toStrictEqual({
      status: 'error',
      output: "Error: tool 'raw' returned no tool result",
    });
    const fine = new RawTool(
      async (toolUseId) => new ToolResultBlock({ toolUseId, status: 'success', content: [new TextBlock('ok')] }),
    );
    expect(await runStrandsTool(guardTool(fine, 1000), {})).toStrictEqual({ status: 'success', output: 'ok' });
  });
});
