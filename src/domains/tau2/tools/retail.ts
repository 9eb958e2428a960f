import { z } from 'zod';
import type { DbRecord } from '../db.js';
import { pyDumps, pyRound2 } from '../py-json.js';
import { calculateTool, defineTool, docDescription, foldForMatch, transferTool, type DomainTool } from './common.js';
import {
  ORDER_ID,
  USER_ID,
  PAYMENT_METHOD_ID,
  ADDRESS,
  addressRecord,
  order,
  user,
  product,
  variant,
  paymentMethod,
  adjustGiftCard,
  count,
  itemsOf,
  pySorted,
} from './retail-records.js';

const cancelPendingOrder = defineTool({
  name: 'cancel_pending_order',
  description: docDescription(
    "Cancel a pending order. If the order is already processed or delivered,\nit cannot be cancelled. The agent needs to explain the cancellation detail\nand ask for explicit user confirmation (yes/no) to proceed. If the user confirms,\nthe order status will be changed to 'cancelled' and the payment will be refunded.\nThe refund will be added to the user's gift card balance immediately if the payment\nwas made using a gift card, otherwise the refund would take 5-7 business days to process.\nThe function returns the order details after the cancellation.",
  ),
  schema: z.object({
    order_id: ORDER_ID,
    reason: z
      .string()
      .describe("The reason for cancellation, which should be either 'no longer needed' or 'ordered by mistake'."),
  }),
  mutates: true,
  run: (db, { order_id, reason }) => {
    const current = order(db, order_id);
    if (current.status !== 'pending') throw new Error('Non-pending order cannot be cancelled');
    if (reason !== 'no longer needed' && reason !== 'ordered by mistake') throw new Error('Invalid reason');
    const refunds: DbRecord[] = [];
    for (const payment of current.payment_history as DbRecord[]) {
      const id = payment.payment_method_id as string;
      refunds.push({ transaction_type: 'refund', amount: payment.amount, payment_method_id: id });
      const method = paymentMethod(db, user(db, current.user_id as string).user_id as string, id);
      if (method.source === 'gift_card') adjustGiftCard(db, current.user_id as string, id, payment.amount as number);
    }
    const o = db.edit('orders', order_id);
    o.status = 'cancelled';
    o.cancel_reason = reason;
    (o.payment_history as DbRecord[]).push(...refunds);
    return db.dump(o);
  },
});

const exchangeDeliveredOrderItems = defineTool({
  name: 'exchange_delivered_order_items',
  description: docDescription(
    'Exchange items in a delivered order to new items of the same product type.\nFor a delivered order, return or exchange can be only done once by the agent.\nThe agent needs to explain the exchange detail and ask for explicit user confirmation (yes/no) to proceed.',
  ),
  schema: z.object({
    order_id: ORDER_ID,
    item_ids: z
      .array(z.string())
      .describe("The item ids to be exchanged, each such as '1008292230'. There could be duplicate items in the list."),
    new_item_ids: z
      .array(z.string())
      .describe(
        "The item ids to be exchanged for, each such as '1008292230'.\nThere could be duplicate items in the list. Each new item id should match the item id\nin the same position and be of the same product.",
      ),
    payment_method_id: z
      .string()
      .describe(
        "The payment method id to pay or receive refund for the item price difference,\nsuch as 'gift_card_0000000' or 'credit_card_0000000'. These can be looked up\nfrom the user or order details.",
      ),
  }),
  mutates: true,
  run: (db, a) => {
    const current = order(db, a.order_id);
    if (current.status !== 'delivered') throw new Error('Non-delivered order cannot be exchanged');
    const all = itemsOf(current).map((i) => i.item_id as string);
    for (const id of a.item_ids)
      if (count(a.item_ids, id) > count(all, id)) throw new Error(`Number of ${id} not found.`);
    if (a.item_ids.length !== a.new_item_ids.length)
      throw new Error('The number of items to be exchanged should match.');
    let diff = 0;
    a.item_ids.forEach((id, i) => {
      const item = itemsOf(current).find((it) => it.item_id === id);
      if (!item) throw new Error(`Item ${id} not found`);
      const next = variant(db, item.product_id as string, a.new_item_ids[i]!);
      if (!next.available) throw new Error(`New item ${a.new_item_ids[i]} not found or available`);
      diff += (next.price as number) - (item.price as number);
    });
    diff = pyRound2(diff);
    const method = paymentMethod(db, current.user_id as string, a.payment_method_id);
    if (method.source === 'gift_card' && (method.balance as number) < diff) {
      throw new Error('Insufficient gift card balance to pay for the price difference');
    }
    const o = db.edit('orders', a.order_id);
    o.status = 'exchange requested';
    o.exchange_items = pySorted(a.item_ids);
    o.exchange_new_items = pySorted(a.new_item_ids);
    o.exchange_payment_method_id = a.payment_method_id;
    o.exchange_price_difference = diff;
    return db.dump(o);
  },
});

const findUserIdByNameZip = defineTool({
  name: 'find_user_id_by_name_zip',
  description: docDescription(
    'Find user id by first name, last name, and zip code. If the user is not found, the function\nwill return an error message. By default, find user id by email, and only call this function\nif the user is not found by email or cannot remember email.',
  ),
  schema: z.object({
    first_name: z.string().describe("The first name of the customer, such as 'John'."),
    last_name: z.string().describe("The last name of the customer, such as 'Doe'."),
    zip: z.string().describe("The zip code of the customer, such as '12345'."),
  }),
  mutates: false,
  run: (db, a) => {
    const first = foldForMatch(a.first_name);
    const last = foldForMatch(a.last_name);
    for (const key of db.keys('users')) {
      const u = db.get('users', key)!;
      const name = u.name as DbRecord;
      if (
        foldForMatch(name.first_name as string) === first &&
        foldForMatch(name.last_name as string) === last &&
        (u.address as DbRecord).zip === a.zip
      ) {
        return key;
      }
    }
    throw new Error('User not found');
  },
});

const findUserIdByEmail = defineTool({
  name: 'find_user_id_by_email',
  description: docDescription(
    'Find user id by email. If the user is not found, the function will return an error message.',
  ),
  schema: z.object({ email: z.string().describe("The email of the user, such as 'something@example.com'.") }),
  mutates: false,
  run: (db, { email }) => {
    const wanted = foldForMatch(email);
    for (const key of db.keys('users')) if (foldForMatch(db.get('users', key)!.email as string) === wanted) return key;
    throw new Error('User not found');
  },
});

const getOrderDetails = defineTool({
  name: 'get_order_details',
  description: 'Get the status and details of an order.',
  schema: z.object({ order_id: ORDER_ID }),
  mutates: false,
  run: (db, { order_id }) => db.dump(order(db, order_id)),
});

const getProductDetails = defineTool({
  name: 'get_product_details',
  description: 'Get the inventory details of a product.',
  schema: z.object({
    product_id: z
      .string()
      .describe("The product id, such as '6086499569'. Be careful the product id is different from the item id."),
  }),
  mutates: false,
  run: (db, { product_id }) => db.dump(product(db, product_id)),
});

const getItemDetails = defineTool({
  name: 'get_item_details',
  description: 'Get the inventory details of an item.',
  schema: z.object({
    item_id: z
      .string()
      .describe("The item id, such as '6086499569'. Be careful the item id is different from the product id."),
  }),
  mutates: false,
  run: (db, { item_id }) => {
    for (const p of db.values('products')) {
      const found = (p.variants as Record<string, DbRecord>)[item_id];
      if (found) return db.dump(found);
    }
    throw new Error('Item not found');
  },
});

const getUserDetails = defineTool({
  name: 'get_user_details',
  description: 'Get the details of a user, including their orders.',
  schema: z.object({ user_id: USER_ID }),
  mutates: false,
  run: (db, { user_id }) => db.dump(user(db, user_id)),
});

const listAllProductTypes = defineTool({
  name: 'list_all_product_types',
  description: docDescription(
    'List the name and product id of all product types.\nEach product type has a variety of different items with unique item ids and options.\nThere are only 50 product types in the store.',
  ),
  schema: z.object({}),
  mutates: false,
  run: (db) => {
    const byName: Record<string, unknown> = {};
    for (const p of db.values('products')) byName[p.name as string] = p.product_id;
    return pyDumps(byName, { sortKeys: true });
  },
});

const modifyPendingOrderAddress = defineTool({
  name: 'modify_pending_order_address',
  description:
    'Modify the shipping address of a pending order. The agent needs to explain the modification detail and ask for explicit user confirmation (yes/no) to proceed.',
  schema: z.object({ order_id: ORDER_ID, ...ADDRESS }),
  mutates: true,
  run: (db, a) => {
    if (!(order(db, a.order_id).status as string).includes('pending'))
      throw new Error('Non-pending order cannot be modified');
    const o = db.edit('orders', a.order_id);
    o.address = addressRecord(a);
    return db.dump(o);
  },
});

const modifyPendingOrderItems = defineTool({
  name: 'modify_pending_order_items',
  description:
    'Modify items in a pending order to new items of the same product type. For a pending order, this function can only be called once. The agent needs to explain the exchange detail and ask for explicit user confirmation (yes/no) to proceed.',
  schema: z.object({
    order_id: ORDER_ID,
    item_ids: z
      .array(z.string())
      .describe("The item ids to be modified, each such as '1008292230'. There could be duplicate items in the list."),
    new_item_ids: z
      .array(z.string())
      .describe(
        "The item ids to be modified for, each such as '1008292230'. There could be duplicate items in the list. Each new item id should match the item id in the same position and be of the same product.",
      ),
    payment_method_id: PAYMENT_METHOD_ID,
  }),
  mutates: true,
  run: (db, a) => {
    const current = order(db, a.order_id);
    if (current.status !== 'pending') throw new Error('Non-pending order cannot be modified');
    const all = itemsOf(current).map((i) => i.item_id as string);
    for (const id of a.item_ids) if (count(a.item_ids, id) > count(all, id)) throw new Error(`${id} not found`);
    if (a.item_ids.length !== a.new_item_ids.length)
      throw new Error('The number of items to be exchanged should match');
    let diff = 0;
    let lastVariant: DbRecord | undefined;
    a.item_ids.forEach((id, i) => {
      const newId = a.new_item_ids[i]!;
      if (id === newId) throw new Error('The new item id should be different from the old item id');
      const item = itemsOf(current).find((it) => it.item_id === id);
      if (!item) throw new Error(`Item ${id} not found`);
      lastVariant = variant(db, item.product_id as string, newId);
      if (!lastVariant.available) throw new Error(`New item ${newId} not found or available`);
      diff += (lastVariant.price as number) - (item.price as number);
    });
    const method = paymentMethod(db, current.user_id as string, a.payment_method_id);
    if (method.source === 'gift_card' && (method.balance as number) < diff)
      throw new Error('Insufficient gift card balance to pay for the new item');
    const o = db.edit('orders', a.order_id);
    (o.payment_history as DbRecord[]).push({
      transaction_type: diff > 0 ? 'payment' : 'refund',
      amount: Math.abs(diff),
      payment_method_id: a.payment_method_id,
    });
    if (method.source === 'gift_card') adjustGiftCard(db, current.user_id as string, a.payment_method_id, -diff);
    a.item_ids.forEach((id, i) => {
      const item = itemsOf(o).find((it) => it.item_id === id);
      if (!item) throw new Error(`Item ${id} not found`);
      item.item_id = a.new_item_ids[i];
      // The reference prices every changed item with the variant of the last pair; kept so states match.
      item.price = lastVariant!.price;
      item.options = structuredClone(lastVariant!.options);
    });
    o.status = 'pending (item modified)';
    return db.dump(o);
  },
});

const modifyPendingOrderPayment = defineTool({
  name: 'modify_pending_order_payment',
  description:
    'Modify the payment method of a pending order. The agent needs to explain the modification detail and ask for explicit user confirmation (yes/no) to proceed.',
  schema: z.object({ order_id: ORDER_ID, payment_method_id: PAYMENT_METHOD_ID }),
  mutates: true,
  run: (db, a) => {
    const current = order(db, a.order_id);
    if (!(current.status as string).includes('pending')) throw new Error('Non-pending order cannot be modified');
    const method = paymentMethod(db, current.user_id as string, a.payment_method_id);
    const history = current.payment_history as DbRecord[];
    if (history.length !== 1 || history[0]!.transaction_type !== 'payment')
      throw new Error('There should be exactly one payment for a pending order');
    const oldId = history[0]!.payment_method_id as string;
    if (oldId === a.payment_method_id)
      throw new Error('The new payment method should be different from the current one');
    const amount = history[0]!.amount as number;
    if (method.source === 'gift_card' && (method.balance as number) < amount)
      throw new Error('Insufficient gift card balance to pay for the order');
    const o = db.edit('orders', a.order_id);
    (o.payment_history as DbRecord[]).push(
      { transaction_type: 'payment', amount, payment_method_id: a.payment_method_id },
      { transaction_type: 'refund', amount, payment_method_id: oldId },
    );
    if (method.source === 'gift_card') adjustGiftCard(db, current.user_id as string, a.payment_method_id, -amount);
    if (paymentMethod(db, current.user_id as string, oldId).source === 'gift_card')
      adjustGiftCard(db, current.user_id as string, oldId, amount);
    return db.dump(o);
  },
});

const modifyUserAddress = defineTool({
  name: 'modify_user_address',
  description:
    'Modify the default address of a user. The agent needs to explain the modification detail and ask for explicit user confirmation (yes/no) to proceed.',
  schema: z.object({ user_id: USER_ID, ...ADDRESS }),
  mutates: true,
  run: (db, a) => {
    user(db, a.user_id);
    const u = db.edit('users', a.user_id);
    u.address = addressRecord(a);
    return db.dump(u);
  },
});

const returnDeliveredOrderItems = defineTool({
  name: 'return_delivered_order_items',
  description: docDescription(
    "Return some items of a delivered order.\nThe order status will be changed to 'return requested'.\nThe agent needs to explain the return detail and ask for explicit user confirmation (yes/no) to proceed.\nThe user will receive follow-up email for how and where to return the item.",
  ),
  schema: z.object({
    order_id: ORDER_ID,
    item_ids: z
      .array(z.string())
      .describe("The item ids to be returned, each such as '1008292230'. There could be duplicate items in the list."),
    payment_method_id: z
      .string()
      .describe(
        "The payment method id to pay or receive refund for the item price difference, such as 'gift_card_0000000' or 'credit_card_0000000'.\nThese can be looked up from the user or order details.",
      ),
  }),
  mutates: true,
  run: (db, a) => {
    const current = order(db, a.order_id);
    if (current.status !== 'delivered') throw new Error('Non-delivered order cannot be returned');
    const method = paymentMethod(db, user(db, current.user_id as string).user_id as string, a.payment_method_id);
    const firstPayment = (current.payment_history as DbRecord[])[0];
    if (method.source !== 'gift_card' && a.payment_method_id !== firstPayment?.payment_method_id) {
      throw new Error('Payment method should be the original payment method');
    }
    const all = itemsOf(current).map((i) => i.item_id as string);
    for (const id of a.item_ids) if (count(a.item_ids, id) > count(all, id)) throw new Error('Some item not found');
    const o = db.edit('orders', a.order_id);
    o.status = 'return requested';
    o.return_items = pySorted(a.item_ids);
    o.return_payment_method_id = a.payment_method_id;
    return db.dump(o);
  },
});

/** The 16 retail agent tools at the current release (the 2025-06-10 release lacks `get_item_details`). */
export const retailTools: readonly DomainTool[] = [
  calculateTool,
  cancelPendingOrder,
  exchangeDeliveredOrderItems,
  findUserIdByNameZip,
  findUserIdByEmail,
  getOrderDetails,
  getProductDetails,
  getItemDetails,
  getUserDetails,
  listAllProductTypes,
  modifyPendingOrderAddress,
  modifyPendingOrderItems,
  modifyPendingOrderPayment,
  modifyUserAddress,
  returnDeliveredOrderItems,
  transferTool,
];
