/** The retail domain's data model and the record lookups and updates its tools share. */
import { z } from 'zod';
import type { DbRecord, DomainModel, EpisodeDb } from '../db.js';
import { pyRound2 } from '../py-json.js';

const FLOAT_KEYS = new Set(['price', 'amount', 'balance', 'exchange_price_difference']);

/** Retail data model: every number is a float (prices, payments, gift-card balances). */
export const retailModel: DomainModel = {
  domain: 'retail',
  tables: ['products', 'users', 'orders'],
  isFloat: (key) => FLOAT_KEYS.has(key),
  optionalFields: {
    orders: [
      'cancel_reason',
      'exchange_items',
      'exchange_new_items',
      'exchange_payment_method_id',
      'exchange_price_difference',
      'return_items',
      'return_payment_method_id',
    ],
  },
};

export const ORDER_ID = z
  .string()
  .describe("The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order id.");
export const USER_ID = z.string().describe("The user id, such as 'sara_doe_496'.");
export const PAYMENT_METHOD_ID = z
  .string()
  .describe(
    "The payment method id to pay or receive refund for the item price difference, such as 'gift_card_0000000' or 'credit_card_0000000'. These can be looked up from the user or order details.",
  );
export const ADDRESS = {
  address1: z.string().describe("The first line of the address, such as '123 Main St'."),
  address2: z.string().describe("The second line of the address, such as 'Apt 1' or ''."),
  city: z.string().describe("The city, such as 'San Francisco'."),
  state: z.string().describe("The state, such as 'CA'."),
  country: z.string().describe("The country, such as 'USA'."),
  zip: z.string().describe("The zip code, such as '12345'."),
};

/** The address record tau2 stores from a tool's ADDRESS arguments, its keys in tau2's order (the dump shows them). */
export function addressRecord(a: { [K in keyof typeof ADDRESS]: string }): DbRecord {
  return { address1: a.address1, address2: a.address2, city: a.city, country: a.country, state: a.state, zip: a.zip };
}

export function order(db: EpisodeDb, orderId: string): DbRecord {
  const found = db.get('orders', orderId);
  if (!found) throw new Error('Order not found');
  return found;
}

export function user(db: EpisodeDb, userId: string): DbRecord {
  const found = db.get('users', userId);
  if (!found) throw new Error('User not found');
  return found;
}

export function product(db: EpisodeDb, productId: string): DbRecord {
  const found = db.get('products', productId);
  if (!found) throw new Error('Product not found');
  return found;
}

export function variant(db: EpisodeDb, productId: string, variantId: string): DbRecord {
  const found = (product(db, productId).variants as Record<string, DbRecord>)[variantId];
  if (!found) throw new Error('Variant not found');
  return found;
}

export function paymentMethod(db: EpisodeDb, userId: string, paymentMethodId: string): DbRecord {
  const found = (user(db, userId).payment_methods as Record<string, DbRecord>)[paymentMethodId];
  if (!found) throw new Error('Payment method not found');
  return found;
}

/** Add `delta` to a gift card's balance, rounded as the reference does. */
export function adjustGiftCard(db: EpisodeDb, userId: string, paymentMethodId: string, delta: number): void {
  const card = (db.edit('users', userId).payment_methods as Record<string, DbRecord>)[paymentMethodId]!;
  card.balance = pyRound2((card.balance as number) + delta);
}

export function count(list: readonly string[], item: string): number {
  return list.reduce((n, x) => (x === item ? n + 1 : n), 0);
}

export function itemsOf(o: DbRecord): DbRecord[] {
  return o.items as DbRecord[];
}

/** Python's `sorted()` on strings: by code point. */
export function pySorted(list: readonly string[]): string[] {
  return [...list].sort();
}
