import { describe, expect, test } from 'vitest';
import { EpisodeDb } from './db.js';
import { helpdeskPolicyViolations } from './helpdesk-policy.js';
import { HelpdeskUser } from './helpdesk-user.js';
import { callTool } from './tools/common.js';
import { HELPDESK_ORDER_COUNT, helpdeskBase, helpdeskModel, helpdeskTools } from './tools/helpdesk.js';
import type { TranscriptTurn } from './evaluator.js';

const orders = Object.values(helpdeskBase().orders!);
const pendingId = orders.find((o) => o.status === 'pending')!.order_id as string;
const deliveredId = orders.find((o) => o.status === 'delivered')!.order_id as string;

describe('helpdesk tools', () => {
  test('returns the same frozen database of 3-digit order ids on every call', () => {
    const first = helpdeskBase();
    expect([helpdeskBase() === first, Object.isFrozen(first.orders![pendingId])]).toStrictEqual([true, true]);
    expect(orders).toHaveLength(HELPDESK_ORDER_COUNT);
    expect(orders.every((o) => /^#[1-9]\d\d$/.test(o.order_id as string))).toBe(true);
  });

  test("returns a lookup, changes only the episode's copy, and refuses to change a delivered order", () => {
    const db = new EpisodeDb(helpdeskModel, helpdeskBase());
    const before = callTool(helpdeskTools, db, 'get_order', { order_id: pendingId });
    expect(before.output).toContain('"status": "pending"');
    expect(callTool(helpdeskTools, db, 'cancel_order', { order_id: pendingId }).output).toContain('"cancelled"');
    expect(helpdeskBase().orders![pendingId]!.status).toBe('pending');
    expect([
      callTool(helpdeskTools, db, 'cancel_order', { order_id: deliveredId }),
      callTool(helpdeskTools, db, 'set_shipping', { order_id: '#000', speed: 'express' }),
      callTool(helpdeskTools, db, 'set_shipping', { order_id: pendingId, speed: 'fast' }).status,
    ]).toStrictEqual([
      { status: 'error', output: 'Error: Order is delivered' },
      { status: 'error', output: 'Error: Order not found' },
      'error',
    ]);
  });
});

const agent = (text: string): TranscriptTurn => ({ role: 'assistant', text });
const said = (text: string): TranscriptTurn => ({ role: 'user', text });

describe('HelpdeskUser', () => {
  test('returns its request without the id, the id only when asked, yes to a confirmation, and ###STOP### otherwise', () => {
    const user = new HelpdeskUser({ kind: 'cancel', order_id: '#417' }, 3);
    const first = user.reply([]);
    expect(['I want to cancel my order.', 'Please cancel my order.']).toContain(first);
    expect(user.reply([said(first), agent('Done.')])).toBe('###STOP###');
    expect(user.reply([said(first), agent('What is your order id?')])).toMatch(/^(It is|My order id is) #417\.$/);
    expect(user.reply([said(first), agent('Please confirm the cancellation.')])).toMatch(/^Yes/);
  });

  test('returns a change of mind at the first confirmation of a cancel_then_shipping task, then yes', () => {
    const user = new HelpdeskUser({ kind: 'cancel_then_shipping', order_id: '#417', speed: 'express' }, 0);
    const asked = [said('Please cancel my order.'), agent('Please confirm the cancellation.')];
    const change = user.reply(asked);
    expect(change).toBe('No, wait. Switch it to express shipping instead.');
    expect(user.reply([...asked, said(change), agent('Do you confirm?')])).toMatch(/^Yes/);
  });

  test('returns the same wording for the same seed', () => {
    const words = (seed: number) => {
      const user = new HelpdeskUser({ kind: 'shipping', order_id: '#417', speed: 'express' }, seed);
      return [user.reply([]), user.reply([said('x'), agent('Your order id?')])];
    };
    expect(words(7)).toStrictEqual(words(7));
    expect(new Set([0, 1, 2, 3, 4, 5, 6, 7].map((s) => words(s).join('|'))).size).toBeGreaterThan(1);
  });
});

const call = (name: string, input: Record<string, unknown>) => ({
  role: 'assistant',
  content: [{ toolUse: { name, toolUseId: 'c', input } }],
});
const result = (text: string, status = 'success') => ({
  role: 'user',
  content: [{ toolResult: { toolUseId: 'c', status, content: [{ text }] } }],
});
const text = (role: 'user' | 'assistant', content: string) => ({ role, content: [{ text: content }] });

describe('helpdeskPolicyViolations', () => {
  const lookup = (id: string, status: string) => [
    text('user', 'Please cancel my order.'),
    text('assistant', 'What is your order id?'),
    text('user', `It is ${id}.`),
    call('get_order', { order_id: id }),
    result(`{"order_id": "${id}", "status": "${status}"}`),
  ];

  test('returns nothing for a conversation that follows the policy', () => {
    expect(
      helpdeskPolicyViolations([
        ...lookup('#417', 'pending'),
        text('assistant', 'Please confirm the cancellation.'),
        text('user', 'Yes, please.'),
        call('cancel_order', { order_id: '#417' }),
        result('{}'),
      ]),
    ).toStrictEqual([]);
  });

  test('returns each rule broken: no confirmation, a delivered order, a guessed id, a change before the lookup', () => {
    expect(
      helpdeskPolicyViolations([...lookup('#417', 'pending'), call('cancel_order', { order_id: '#417' })]),
    ).toStrictEqual(["cancel_order on #417 without the user's confirmation"]);
    expect(
      helpdeskPolicyViolations([...lookup('#417', 'delivered'), call('cancel_order', { order_id: '#417' })]),
    ).toStrictEqual(['cancel_order on #417, a delivered order (policy: transfer)']);
    expect(
      helpdeskPolicyViolations([
        text('user', 'Switch it to express.'),
        call('set_shipping', { order_id: '#418', speed: 'express' }),
      ]),
    ).toStrictEqual([
      'set_shipping on #418, an order id the user never gave',
      'set_shipping on #418 before looking it up',
    ]);
  });
});
