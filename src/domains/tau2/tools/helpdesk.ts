/**
 * The help-desk domain: a small order database atk generates (no download), four tools and a
 * policy short enough for a tiny model's context. It is a tau2 domain like airline and retail: the
 * `tau2` tools and reward run it with `domain: helpdesk`, on the same copy-on-write database,
 * evaluator and user-simulator path, so a run on it exercises tau2's multi-turn machinery.
 */
import { z } from 'zod';
import { createRng, hash32 } from '../../../util/random.js';
import type { BaseTables, DbRecord, DomainModel, EpisodeDb } from '../db.js';
import { defineTool, transferTool, type DomainTool } from './common.js';

/** One table, `orders` (id, status, shipping speed), keyed by order id; no float fields. */
export const helpdeskModel: DomainModel = {
  domain: 'helpdesk',
  tables: ['orders'],
  isFloat: () => false,
  optionalFields: {},
};

/** What the agent is told. Each rule is one the policy check counts (helpdesk-policy.ts). */
export const HELPDESK_POLICY =
  'Help with orders. Ask for the order id; never guess it. Look the order up before changing it. ' +
  'Ask the user to confirm before cancelling. A delivered order cannot be cancelled: transfer to a human.';

/** Orders in the database: 3-digit ids, so a held-out order's id was never seen in training. */
export const HELPDESK_ORDER_COUNT = 500;
/** Share of orders already delivered (their cancellation must go to a human). */
const DELIVERED_SHARE = 0.25;
export const SHIPPING_SPEEDS = ['standard', 'express'] as const;

let base: BaseTables | undefined;

/** The database every episode starts from: a pure function of nothing, generated once per process and frozen. */
export function helpdeskBase(): BaseTables {
  if (base) return base;
  const rng = createRng(hash32('helpdesk-db'));
  const ids = new Set<number>();
  while (ids.size < HELPDESK_ORDER_COUNT) ids.add(100 + Math.floor(rng() * 900));
  const orders: Record<string, DbRecord> = {};
  for (const n of [...ids].sort((a, b) => a - b)) {
    const id = `#${n}`;
    orders[id] = Object.freeze({
      order_id: id,
      status: rng() < DELIVERED_SHARE ? 'delivered' : 'pending',
      shipping: SHIPPING_SPEEDS[Math.floor(rng() * SHIPPING_SPEEDS.length)]!,
    });
  }
  base = Object.freeze({ orders: Object.freeze(orders) });
  return base;
}

const ORDER_ID = z.string().describe("The order id, such as '#417'.");

function order(db: EpisodeDb, id: string): DbRecord {
  const found = db.get('orders', id);
  if (!found) throw new Error('Order not found');
  return found;
}

function pending(db: EpisodeDb, id: string): DbRecord {
  if (order(db, id).status !== 'pending') throw new Error(`Order is ${order(db, id).status as string}`);
  return db.edit('orders', id);
}

const getOrder = defineTool({
  name: 'get_order',
  description: 'Look an order up by its id.',
  schema: z.object({ order_id: ORDER_ID }),
  mutates: false,
  run: (db, { order_id }) => db.dump(order(db, order_id)),
});

const setShipping = defineTool({
  name: 'set_shipping',
  description: 'Change the shipping speed of a pending order.',
  schema: z.object({ order_id: ORDER_ID, speed: z.enum(SHIPPING_SPEEDS).describe('The new shipping speed.') }),
  mutates: true,
  run: (db, { order_id, speed }) => {
    const record = pending(db, order_id);
    record.shipping = speed;
    return db.dump(record);
  },
});

const cancelOrder = defineTool({
  name: 'cancel_order',
  description: 'Cancel a pending order, after the user has confirmed.',
  schema: z.object({ order_id: ORDER_ID }),
  mutates: true,
  run: (db, { order_id }) => {
    const record = pending(db, order_id);
    record.status = 'cancelled';
    return db.dump(record);
  },
});

/** The agent's tools, in the order the system prompt lists them. */
export const helpdeskTools: readonly DomainTool[] = [getOrder, setShipping, cancelOrder, transferTool];
