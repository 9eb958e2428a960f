import { tool, type Tool } from '@strands-agents/sdk';
import { z } from 'zod';
import { parseComponentOptions } from '../util/component-options.js';
import { calculate, DEFAULT_CALCULATOR_LIMITS, type CalculatorLimits } from '../util/calculator-eval.js';
import type { EpisodeTools, ToolDefinition } from './types.js';

export {
  calculate,
  CalculatorError,
  evaluateExpression,
  formatRational,
  DEFAULT_CALCULATOR_LIMITS,
  type CalculatorLimits,
  type Rational,
} from '../util/calculator-eval.js';

/** What the model is told; the tiny model's template shows only the name and argument names. */
export const CALCULATOR_DESCRIPTION =
  'Evaluate an arithmetic expression exactly: numbers, + - * / % ** and parentheses (write percentages as /100). Returns the number.';

const CalculatorOptions = z.strictObject({
  max_length: z
    .number()
    .int()
    .positive()
    .default(DEFAULT_CALCULATOR_LIMITS.maxLength)
    .describe('Longest expression accepted, in characters.'),
});

/**
 * Tool `calculator` (option `max_length`): one stateless Strands tool shared by every episode.
 * A bad expression throws, which the agent loop turns into the error result `Error: <why>` the
 * model reads.
 * @throws ConfigError on unknown or invalid options.
 */
export const calculatorTools: ToolDefinition = {
  name: 'calculator',
  options: CalculatorOptions,
  async create(options): Promise<EpisodeTools> {
    const { max_length } = parseComponentOptions(CalculatorOptions, options, 'tools.calculator.options');
    const shared = calculatorTool({ ...DEFAULT_CALCULATOR_LIMITS, maxLength: max_length });
    return () => [shared];
  },
};

/** The calculator as a Strands tool with input `{expression: string}` and the result as text. */
export function calculatorTool(limits: CalculatorLimits = DEFAULT_CALCULATOR_LIMITS): Tool {
  return tool({
    name: 'calculator',
    description: CALCULATOR_DESCRIPTION,
    inputSchema: z.object({ expression: z.string().describe('The expression, e.g. 12 * (3 + 4)') }),
    callback: ({ expression }) => calculate(expression, limits),
  });
}
