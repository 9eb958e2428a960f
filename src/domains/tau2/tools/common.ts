import { tool, type Tool } from '@strands-agents/sdk';
import { z } from 'zod';
import type { EpisodeDb } from '../db.js';
import { formatZodIssues } from '../../../util/zod-issues.js';
import { pyRoundedString } from '../py-json.js';

/**
 * One agent tool of a tau2 domain: its prompt-facing name, description and argument schema,
 * whether it can change the database (only those are replayed by the evaluator), and its body.
 * The body throws an Error whose message is the reference's; callers turn it into
 * `Error: <message>` exactly as the reference's environment does.
 */
export interface DomainTool {
  readonly name: string;
  readonly description: string;
  readonly schema: z.ZodType<Record<string, unknown>>;
  readonly mutates: boolean;
  readonly run: (db: EpisodeDb, args: Record<string, unknown>) => string;
}

/** Build a {@link DomainTool} with a typed body. */
export function defineTool<S extends z.ZodType<Record<string, unknown>>>(spec: {
  readonly name: string;
  readonly description: string;
  readonly schema: S;
  readonly mutates: boolean;
  readonly run: (db: EpisodeDb, args: z.infer<S>) => string;
}): DomainTool {
  return spec as unknown as DomainTool;
}

/**
 * An integer argument. `z.number().int()` would write ±2^53 bounds into the tool schema the
 * model reads; this keeps the schema `{"type": "integer"}` as the reference's pydantic schema has
 * it, and still rejects fractions as pydantic does.
 */
export function intArg(description: string): z.ZodType<number> {
  return z.number().refine(Number.isInteger, 'Input should be a valid integer').meta({ type: 'integer', description });
}

/** One tool call's result as the model sees it. */
export interface ToolOutcome {
  readonly status: 'success' | 'error';
  readonly output: string;
}

/** Run a tool by name against a database, with the same validation and error text as the Strands tool. */
export function callTool(tools: readonly DomainTool[], db: EpisodeDb, name: string, args: unknown): ToolOutcome {
  const found = tools.find((t) => t.name === name);
  if (!found) return { status: 'error', output: `Error: Tool '${name}' not found.` };
  const parsed = found.schema.safeParse(args);
  if (!parsed.success) return { status: 'error', output: `Error: ${formatZodIssues(parsed.error, 'arguments')}` };
  try {
    return { status: 'success', output: found.run(db, parsed.data) };
  } catch (error) {
    return { status: 'error', output: `Error: ${error instanceof Error ? error.message : String(error)}` };
  }
}

/** The domain tools as Strands tools bound to one episode's database. */
export function strandsTools(tools: readonly DomainTool[], db: EpisodeDb): Tool[] {
  return tools.map((t) =>
    tool({
      name: t.name,
      description: t.description,
      inputSchema: t.schema,
      callback: (input: Record<string, unknown>) => t.run(db, input),
    }),
  );
}

/** Run one Strands tool call to its result, as the agent loop would (tool errors become error results). */
export async function runStrandsTool(t: Tool, input: unknown): Promise<ToolOutcome> {
  const stream = t.stream({ toolUse: { name: t.name, toolUseId: 'call', input } } as never);
  let step = await stream.next();
  while (!step.done) step = await stream.next();
  const output = step.value.content.map((block) => ('text' in block ? String(block.text) : '')).join('');
  return { status: step.value.status, output };
}

/** Case-, accent- and edge-whitespace-insensitive form used by the reference's tolerant lookups. */
export function foldForMatch(text: string): string {
  return text.trim().normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();
}

/** A reference docstring's description: its first line, a blank line, then the rest (docstring_parser's short + long). */
export function docDescription(text: string): string {
  const [first, ...rest] = text.split('\n');
  return rest.length > 0 ? `${first}\n\n${rest.join('\n')}` : (first ?? '');
}

/** The shared `calculate` tool: the reference's character check, Python arithmetic, `str(round(x, 2))`. */
export const calculateTool = defineTool({
  name: 'calculate',
  description: 'Calculate the result of a mathematical expression.',
  schema: z.object({
    expression: z
      .string()
      .describe(
        "The mathematical expression to calculate, such as '2 + 2'. The expression can contain numbers, operators (+, -, *, /), parentheses, and spaces.",
      ),
  }),
  mutates: false,
  run: (_db, { expression }) => {
    if (![...expression].every((ch) => '0123456789+-*/(). '.includes(ch)))
      throw new Error('Invalid characters in expression');
    return pyRoundedString(evaluateArithmetic(expression));
  },
});

/** The shared `transfer_to_human_agents` tool. */
export const transferTool = defineTool({
  name: 'transfer_to_human_agents',
  description:
    "Transfer the user to a human agent, with a summary of the user's issue.\n\nOnly transfer if\n -  the user explicitly asks for a human agent\n -  given the policy and the available tools, you cannot solve the user's issue.",
  schema: z.object({ summary: z.string().describe("A summary of the user's issue.") }),
  mutates: false,
  run: () => 'Transfer successful',
});

/**
 * Evaluate `+ - * / // **` with parentheses and unary signs as Python's `eval` does for the
 * characters `calculate` allows (`**` binds tighter than a unary minus on its left).
 * @throws Error('invalid syntax') or Error('division by zero').
 */
export function evaluateArithmetic(expression: string): number {
  const tokens = expression.match(/\d+\.?\d*|\.\d+|\*\*|\/\/|[-+*/()]|\S/g) ?? [];
  let pos = 0;
  const peek = (): string | undefined => tokens[pos];
  const take = (): string | undefined => tokens[pos++];
  const sum = (): number => {
    let value = product();
    while (peek() === '+' || peek() === '-') value = take() === '+' ? value + product() : value - product();
    return value;
  };
  const product = (): number => {
    let value = unary();
    for (let op = peek(); op === '*' || op === '/' || op === '//'; op = peek()) {
      take();
      const right = unary();
      if (op === '*') value *= right;
      else if (right === 0) throw new Error('division by zero');
      else value = op === '/' ? value / right : Math.floor(value / right);
    }
    return value;
  };
  const unary = (): number => {
    const sign = peek();
    if (sign !== '-' && sign !== '+') return power();
    take();
    return sign === '-' ? -unary() : unary();
  };
  const power = (): number => {
    const base = atom();
    if (peek() !== '**') return base;
    take();
    return base ** unary();
  };
  const atom = (): number => {
    const token = take();
    if (token === '(') {
      const value = sum();
      if (take() !== ')') throw new Error('invalid syntax');
      return value;
    }
    if (token === undefined || !/^(\d|\.\d)/.test(token)) throw new Error('invalid syntax');
    return Number(token);
  };
  const result = sum();
  if (pos !== tokens.length) throw new Error('invalid syntax');
  return result;
}
