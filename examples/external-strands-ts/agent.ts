// A Strands Agents (TypeScript SDK) agent atk can train: the SDK's own OpenAI model provider pointed at
// atk's gateway, with a zod-typed calculator tool. atk runs it once per episode (recipe
// `agent.external.command: [npx, tsx, agent.ts]`) with OPENAI_BASE_URL, OPENAI_API_KEY and
// ATK_EPISODE_ID set and the task as JSON on stdin; it prints {"answer": ...} as its last stdout line.
import { Agent, NullConversationManager, tool } from '@strands-agents/sdk';
import { OpenAIModel } from '@strands-agents/sdk/models/openai';
import { z } from 'zod';
import { calculate } from '../external-typescript/agent.js';

const calculator = tool({
  name: 'calculator',
  description:
    'Evaluate an arithmetic expression exactly: numbers, + - * / % ** and parentheses (write percentages as /100). Returns the number.',
  inputSchema: z.object({ expression: z.string().describe('The expression, e.g. 12 * (3 + 4)') }),
  callback: ({ expression }) => calculate(expression),
});

/**
 * A Strands agent whose model is the OpenAI-compatible server at `baseUrl` (Chat Completions, streamed).
 * History is kept whole (no sliding window), so every turn extends the last one and atk appends only
 * the new tokens.
 */
export function strandsAgent(baseUrl: string, apiKey: string, systemPrompt?: string): Agent {
  const model = new OpenAIModel({
    api: 'chat',
    modelId: 'policy',
    apiKey,
    clientConfig: { baseURL: baseUrl, maxRetries: 0 },
  });
  return new Agent({
    model,
    tools: [calculator],
    printer: false,
    conversationManager: new NullConversationManager(),
    ...(systemPrompt ? { systemPrompt } : {}),
  });
}

/** The text of the agent's last message. */
export async function answer(agent: Agent, prompt: string): Promise<string> {
  const result = await agent.invoke(prompt, { limits: { turns: 3 } });
  return result.lastMessage.content.map((block) => (block.type === 'textBlock' ? block.text : '')).join('');
}

async function main(): Promise<void> {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  const task = JSON.parse(input) as { prompt: string; system_prompt?: string };
  const agent = strandsAgent(process.env.OPENAI_BASE_URL!, process.env.OPENAI_API_KEY!, task.system_prompt);
  process.stdout.write(`${JSON.stringify({ answer: await answer(agent, task.prompt) })}\n`);
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) await main();
