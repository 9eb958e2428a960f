import { describe, expect, test } from 'vitest';
import { runStrandsTool, TAU2_TERMINATION_KEY } from '../domains/tau2/index.js';
import { rewards } from '../rewards/index.js';
import type { ChatMessage } from '../tokens/chat-types.js';
import { tools } from '../tools/index.js';
import type { EpisodeEnv } from '../tools/types.js';
import { generateHelpdesk, HelpdeskOptions } from './helpdesk.js';
import type { Task } from './types.js';

const perfect = HelpdeskOptions.parse({});
const kindOf = (task: Task): string => task.id.split(':')[0]!;

describe('generateHelpdesk', () => {
  test('returns one task per order, train and test over disjoint orders, in a fixed order that mixes every kind', () => {
    const [train, test] = [generateHelpdesk('train', perfect), generateHelpdesk('test', perfect)];
    const orderIds = (tasks: Task[]) => new Set(tasks.map((t) => t.id.split(':')[1]));
    expect(train.length + test.length).toBe(500);
    expect([...orderIds(test)].filter((id) => orderIds(train).has(id))).toStrictEqual([]);
    expect(new Set(test.slice(0, 20).map(kindOf)).size).toBe(4);
    expect(generateHelpdesk('test', perfect).map((t) => t.id)).toStrictEqual(test.map((t) => t.id));
  });

  test('returns references_per_order train tasks per order, each drawing its own slips and wording; test keeps one per order', () => {
    const options = HelpdeskOptions.parse({ references_per_order: 8, reference_slips: { skips_confirm: 0.5 } });
    const train = generateHelpdesk('train', options);
    const one = generateHelpdesk('train', HelpdeskOptions.parse({ reference_slips: { skips_confirm: 0.5 } }));
    expect(train.length).toBe(8 * one.length);
    expect(new Set(train.map((t) => t.id)).size).toBe(train.length);
    expect(generateHelpdesk('test', options).map((t) => t.id)).toStrictEqual(
      generateHelpdesk('test', perfect).map((t) => t.id),
    );
    // one pending cancellation's eight demonstrations: some ask to confirm, some do not, and the opening varies
    const copies = train.filter((t) => t.id.startsWith(`${one.find((t) => kindOf(t) === 'cancel')!.id}/`));
    expect(copies).toHaveLength(8);
    const asks = copies.map((t) => (t.data.reference as ChatMessage[]).some((m) => /confirm/.test(m.content)));
    expect(new Set(asks)).toStrictEqual(new Set([true, false]));
    const openings = copies.map((t) => (t.data.reference as ChatMessage[])[0]!.content);
    expect(new Set(openings).size).toBe(2);
  });
});

/**
 * Replays a task's reference conversation through the registered `tau2` tools (domain helpdesk) on a
 * fresh episode, as the agent loop would call them, and scores it with the registered `tau2` reward.
 */
async function scoreReference(task: Task) {
  const makeTools = await (await tools.get('tau2')).create({ domain: 'helpdesk' }, { recipeDir: '.', warn: () => {} });
  const env: EpisodeEnv = { episodeId: 'e', task, state: new Map(), signal: new AbortController().signal };
  const bound = makeTools(env);
  const messages: unknown[] = [];
  const toolCalls = [];
  for (const m of task.data.reference as ChatMessage[]) {
    const call = m.tool_calls?.[0]?.function;
    if (call) {
      const outcome = await runStrandsTool(bound.find((t) => t.name === call.name)!, call.arguments);
      toolCalls.push({ name: call.name, input: call.arguments, ...outcome });
      messages.push({
        role: 'assistant',
        content: [{ toolUse: { name: call.name, toolUseId: 'c', input: call.arguments } }],
      });
      messages.push({
        role: 'user',
        content: [{ toolResult: { toolUseId: 'c', status: outcome.status, content: [{ text: outcome.output }] } }],
      });
    } else if (m.role !== 'tool') messages.push({ role: m.role, content: [{ text: m.content }] });
  }
  env.state.set(TAU2_TERMINATION_KEY, 'user_stop');
  const reward = await (await rewards.get('tau2')).create({ domain: 'helpdesk' }, { recipeDir: '.', warn: () => {} });
  const result = await reward({ task, finalText: '', messages, toolCalls, finishReason: 'endTurn', env });
  const { score, info } = result as { score: number; info: { policy_violations: string[] } };
  return { score, violations: info.policy_violations.length };
}

describe('helpdesk reference conversations', () => {
  test('returns reward 1 and no policy violation for every kind when the teacher is perfect', async () => {
    const tasks = generateHelpdesk('train', perfect).slice(0, 24);
    const scores = await Promise.all(tasks.map(scoreReference));
    expect(new Set(tasks.map(kindOf)).size).toBe(4);
    expect(scores).toStrictEqual(tasks.map(() => ({ score: 1, violations: 0 })));
  });

  test("returns the teacher's slips as failures: an unconfirmed cancel fails a customer who changes their mind, a delivered cancel fails", async () => {
    const sloppy = HelpdeskOptions.parse({ reference_slips: { skips_confirm: 1, cancels_delivered: 1 } });
    const tasks = generateHelpdesk('train', sloppy).slice(0, 24);
    const scores = await Promise.all(tasks.map(scoreReference));
    const expected = tasks.map(
      (t) =>
        ({
          cancel: { score: 1, violations: 1 },
          cancel_then_shipping: { score: 0, violations: 1 },
          shipping: { score: 1, violations: 0 },
          cancel_delivered: { score: 0, violations: 1 },
        })[kindOf(t)],
    );
    expect(scores).toStrictEqual(expected);
  });

  test('returns a wrong record for a slipped order id: reward 0', async () => {
    const slipped = HelpdeskOptions.parse({ reference_slips: { wrong_record: 1 } });
    const tasks = generateHelpdesk('train', slipped).slice(0, 12);
    const scores = await Promise.all(tasks.map(scoreReference));
    expect(scores.map((s) => s.score)).toStrictEqual(tasks.map(() => 0));
  });
});
