// A tool-using agent atk can train, written with the official `openai` npm client and function calling.
// atk runs it once per episode (recipe `agent.external.command: [npx, tsx, agent.ts]`) with
// OPENAI_BASE_URL, OPENAI_API_KEY and ATK_EPISODE_ID set and the task as JSON on stdin; it prints
// {"answer": ...} as its last stdout line. `solve` is the agent loop, usable from any program.
import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';

/** The task atk writes on stdin. */
export interface AgentTask {
  readonly id: string;
  readonly prompt: string;
  readonly system_prompt?: string;
}

export const calculatorTool: ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'calculator',
    description:
      'Evaluate an arithmetic expression exactly: numbers, + - * / % ** and parentheses (write percentages as /100). Returns the number.',
    parameters: {
      type: 'object',
      properties: { expression: { type: 'string', description: 'The expression, e.g. 12 * (3 + 4)' } },
      required: ['expression'],
    },
  },
};

/**
 * Calls the model, runs the calculator calls it makes, and returns its final text, within `maxTurns`
 * model calls. With `stream` the replies arrive as Server-Sent Events and are put back together here.
 */
export async function solve(
  client: OpenAI,
  task: AgentTask,
  options: { readonly stream?: boolean; readonly maxTurns?: number; readonly model?: string } = {},
): Promise<{ answer: string; messages: ChatCompletionMessageParam[] }> {
  const messages: ChatCompletionMessageParam[] = [
    ...(task.system_prompt ? [{ role: 'system' as const, content: task.system_prompt }] : []),
    { role: 'user', content: task.prompt },
  ];
  for (let turn = 0; turn < (options.maxTurns ?? 3); turn++) {
    const request = { model: options.model ?? 'policy', messages, tools: [calculatorTool] };
    const message = options.stream
      ? await streamed(client, request)
      : (await client.chat.completions.create(request)).choices[0]!.message;
    const calls = (message.tool_calls ?? []).filter((c) => c.type === 'function');
    messages.push({ role: 'assistant', content: message.content, ...(calls.length ? { tool_calls: calls } : {}) });
    if (calls.length === 0) return { answer: message.content ?? '', messages };
    for (const call of calls) {
      const { expression } = JSON.parse(call.function.arguments || '{}') as { expression?: string };
      messages.push({ role: 'tool', tool_call_id: call.id, content: calculate(String(expression ?? '')) });
    }
  }
  return { answer: '', messages };
}

/** One streamed completion, its deltas joined into a message. */
async function streamed(
  client: OpenAI,
  request: { model: string; messages: ChatCompletionMessageParam[]; tools: ChatCompletionTool[] },
): Promise<OpenAI.Chat.Completions.ChatCompletionMessage> {
  let content = '';
  const calls: { id: string; type: 'function'; function: { name: string; arguments: string } }[] = [];
  for await (const chunk of await client.chat.completions.create({ ...request, stream: true })) {
    const delta = chunk.choices[0]?.delta;
    content += delta?.content ?? '';
    for (const call of delta?.tool_calls ?? []) {
      const slot = (calls[call.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
      slot.id += call.id ?? '';
      slot.function.name += call.function?.name ?? '';
      slot.function.arguments += call.function?.arguments ?? '';
    }
  }
  return {
    role: 'assistant',
    content: content || (calls.length ? null : ''),
    refusal: null,
    ...(calls.length ? { tool_calls: calls } : {}),
  };
}

/** + - * / % ** and parentheses on numbers; an unusable expression answers `Error: <why>`. */
export function calculate(expression: string): string {
  const tokens = expression.replace(/,/g, '').match(/\d+(?:\.\d+)?|\*\*|[-+*/%()]|\S/g) ?? [];
  let at = 0;
  const peek = (): string | undefined => tokens[at];
  const primary = (): number => {
    const token = tokens[at++];
    if (token === '(') {
      const value = sum();
      if (tokens[at++] !== ')') throw new Error('missing )');
      return value;
    }
    if (token === '-') return -power();
    if (token !== undefined && /^\d/.test(token)) return Number(token);
    throw new Error(`unexpected ${token ?? 'end of expression'}`);
  };
  const power = (): number => {
    const base = primary();
    if (peek() !== '**') return base;
    at++;
    return base ** power();
  };
  const product = (): number => {
    let value = power();
    while (peek() === '*' || peek() === '/' || peek() === '%') {
      const op = tokens[at++];
      const right = power();
      value = op === '*' ? value * right : op === '/' ? value / right : value % right;
    }
    return value;
  };
  const sum = (): number => {
    let value = product();
    while (peek() === '+' || peek() === '-') value = tokens[at++] === '+' ? value + product() : value - product();
    return value;
  };
  try {
    const value = sum();
    if (at !== tokens.length) throw new Error(`unexpected ${tokens[at]}`);
    if (!Number.isFinite(value)) throw new Error('division by zero');
    return Number.isInteger(value) ? String(value) : String(Number(value.toFixed(10)));
  } catch (error) {
    return `Error: ${(error as Error).message}`;
  }
}

async function main(): Promise<void> {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  const client = new OpenAI({
    baseURL: process.env.OPENAI_BASE_URL,
    apiKey: process.env.OPENAI_API_KEY,
    maxRetries: 0,
  });
  const { answer } = await solve(client, JSON.parse(input) as AgentTask);
  process.stdout.write(`${JSON.stringify({ answer })}\n`);
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) await main();
