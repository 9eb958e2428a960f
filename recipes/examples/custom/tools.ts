// Tools for custom.yaml: any Strands tool (zod-typed) exported from a module can be given to the agent.
import { tool } from '@strands-agents/sdk';
import { z } from 'zod';

/** The tiny model was trained to call `calculator` with an `expression`, so this tool keeps that shape. */
export const calculator = tool({
  name: 'calculator',
  description: 'Evaluate an arithmetic expression: numbers, + - * / and parentheses. Returns the number.',
  inputSchema: z.object({ expression: z.string().describe('The expression, e.g. 12 * (3 + 4)') }),
  callback: ({ expression }) => {
    // Thrown errors become an error result the model reads ("Error: ..."), counted per tool.
    if (!/^[\d\s+\-*/().]+$/.test(expression)) throw new Error(`not an arithmetic expression: ${expression}`);
    const value = Function(`"use strict"; return (${expression});`)() as number;
    if (!Number.isFinite(value)) throw new Error('the result is not a finite number');
    return value;
  },
});
