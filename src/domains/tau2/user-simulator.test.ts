import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, test } from 'vitest';
import { ProviderError } from '../../errors/index.js';
import { dataDir } from '../../util/paths.js';
import { agentSystemPrompt, AGENT_GREETING, loadPolicy, loadUserGuidelines, userSystemPrompt } from './prompts.js';
import { loadTau2Tasks } from './tasks.js';
import { ChatUrlUser, isStopMessage, ScriptedUser } from './user-simulator.js';

describe('ScriptedUser', () => {
  test('returns its messages in order, then ###STOP###', async () => {
    const user = new ScriptedUser(['I want to cancel an order.', 'Yes, please.']);
    const greeting = { role: 'assistant' as const, text: AGENT_GREETING };
    expect(await user.respond([greeting])).toBe('I want to cancel an order.');
    const later = [
      greeting,
      { role: 'user' as const, text: 'I want to cancel an order.' },
      { role: 'assistant' as const, text: 'Sure?' },
    ];
    expect(await user.respond(later)).toBe('Yes, please.');
    const last = await user.respond([
      ...later,
      { role: 'user' as const, text: 'Yes, please.' },
      { role: 'assistant' as const, text: 'Done.' },
    ]);
    expect([
      last,
      isStopMessage(last),
      isStopMessage('###TRANSFER###'),
      isStopMessage('###OUT-OF-SCOPE###'),
      isStopMessage('thanks'),
    ]).toStrictEqual(['###STOP###', true, true, true, false]);
  });
});

describe('userSystemPrompt', () => {
  test('returns the guidelines and the scenario block of a real task', async () => {
    const [task] = await loadTau2Tasks(dataDir(), 'airline', 'current', 'all');
    const guidelines = await loadUserGuidelines(dataDir());
    const prompt = userSystemPrompt(guidelines, task!);
    expect(
      prompt.startsWith(`${guidelines}\n\n<scenario>\nInstructions:\n\tDomain: airline\n\tReason for call:\n\t\t`),
    ).toBe(true);
    expect(prompt).toContain('\n\tTask instructions:\n\t\t');
    expect(prompt.endsWith('\n</scenario>')).toBe(true);
  });

  test('returns the agent prompt with the reference framing around the policy', async () => {
    const policy = await loadPolicy(dataDir(), 'retail');
    const prompt = agentSystemPrompt(policy);
    expect(
      prompt.startsWith(
        '<instructions>\nYou are a customer service agent that helps the user according to the <policy> provided below.',
      ),
    ).toBe(true);
    expect(prompt.endsWith(`</instructions>\n<policy>\n${policy}\n</policy>`)).toBe(true);
  });
});

describe('ChatUrlUser', () => {
  async function withServer(
    reply: (body: unknown) => [number, unknown],
    run: (url: string, seen: unknown[]) => Promise<void>,
  ): Promise<void> {
    const seen: unknown[] = [];
    const server = createServer((req: IncomingMessage, res) => {
      let raw = '';
      req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
      req.on('end', () => {
        const body = JSON.parse(raw) as unknown;
        seen.push({ path: req.url, body });
        const [status, payload] = reply(body);
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      await run(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, seen);
    } finally {
      server.close();
    }
  }

  test('returns the reply to the flipped conversation sent to /v1/chat/completions', async () => {
    await withServer(
      () => [200, { choices: [{ message: { role: 'assistant', content: 'Hi, I need to change my flight.' } }] }],
      async (url, seen) => {
        const user = new ChatUrlUser({ url, model: 'user-model', systemPrompt: 'SYS' });
        const text = await user.respond([{ role: 'assistant', text: AGENT_GREETING }]);
        expect(text).toBe('Hi, I need to change my flight.');
        expect(seen).toStrictEqual([
          {
            path: '/v1/chat/completions',
            body: {
              model: 'user-model',
              messages: [
                { role: 'system', content: 'SYS' },
                { role: 'user', content: AGENT_GREETING },
              ],
              temperature: 0,
              max_tokens: 512,
            },
          },
        ]);
      },
    );
  });

  test('rejects an HTTP error with a ProviderError quoting the server', async () => {
    await withServer(
      () => [503, { error: 'overloaded' }],
      async (url) => {
        const user = new ChatUrlUser({ url, model: 'm', systemPrompt: 'S' });
        await expect(user.respond([])).rejects.toThrow(ProviderError);
        await expect(user.respond([])).rejects.toThrow(/503: \{"error":"overloaded"\}/);
      },
    );
  });
});
