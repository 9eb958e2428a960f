import { describe, expect, test } from 'vitest';
import { fullOrSlice } from '../../../__fixtures__/test-data.js';
import { dataDir } from '../../../util/paths.js';
import { domainSpec, newEpisodeDb } from '../domain.js';
import { callTool, evaluateArithmetic, runStrandsTool, strandsTools } from './common.js';

describe('airlineTools', () => {
  test('returns the 14 reference tools with integer schemas free of 2^53 bounds', () => {
    const tools = strandsTools(domainSpec('airline').tools, undefined as never);
    expect(tools.map((t) => t.name).sort()).toStrictEqual([
      'book_reservation',
      'calculate',
      'cancel_reservation',
      'get_flight_status',
      'get_reservation_details',
      'get_user_details',
      'list_all_airports',
      'search_direct_flight',
      'search_onestop_flight',
      'send_certificate',
      'transfer_to_human_agents',
      'update_reservation_baggages',
      'update_reservation_flights',
      'update_reservation_passengers',
    ]);
    const spec = JSON.stringify(tools.find((t) => t.name === 'send_certificate')!.toolSpec.inputSchema);
    expect(spec).toContain('"amount":{"type":"integer","description":"The amount of the certificate to send."}');
    expect(spec).not.toContain('9007199254740991');
  });

  test('returns reference outputs and error messages', async () => {
    const spec = domainSpec('airline');
    const db = await newEpisodeDb(spec, dataDir());
    const call = (name: string, args: unknown): string => callTool(spec.tools, db, name, args).output;
    expect(call('get_user_details', { user_id: 'nobody_1' })).toBe('Error: User nobody_1 not found');
    expect(call('get_user_details', { user_id: 'Mia_Li_3668' })).toContain(
      '"payment_methods": {"credit_card_4421486": {"source": "credit_card"',
    );
    expect(call('get_user_details', { user_id: 'mia_li_3668' })).toContain(
      '"certificate_4856383": {"source": "certificate", "id": "certificate_4856383", "amount": 100.0}',
    );
    expect(call('get_reservation_details', { reservation_id: '4WQ150' })).toMatch(
      /"insurance": "no", "status": null}$/,
    );
    expect(call('get_flight_status', { flight_number: 'HAT001', date: '2024-05-03' })).toBe('cancelled');
    expect(call('get_flight_status', { flight_number: 'HAT001', date: '2023-01-01' })).toBe(
      'Error: Flight HAT001 not found on date 2023-01-01',
    );
    expect(call('calculate', { expression: '2 + 2' })).toBe('4.0');
    expect(call('calculate', { expression: '10 / 3' })).toBe('3.33');
    expect(call('calculate', { expression: 'import os' })).toBe('Error: Invalid characters in expression');
    expect(call('transfer_to_human_agents', { summary: 'x' })).toBe('Transfer successful');
    expect(JSON.parse(call('list_all_airports', {}))).toHaveLength(20);
    const direct = JSON.parse(
      call('search_direct_flight', { origin: 'JFK', destination: 'LAX', date: '2024-05-20' }),
    ) as { status: string; date: null }[];
    expect(direct.every((f) => f.status === 'available' && f.date === null)).toBe(true);
    const onestop = JSON.parse(
      call('search_onestop_flight', { origin: 'JFK', destination: 'SEA', date: '2024-05-20' }),
    ) as { date: string }[][];
    expect(onestop.length).toBeGreaterThan(0);
    expect(onestop.every(([a, b]) => a!.date === '2024-05-20' && typeof b!.date === 'string')).toBe(true);
    expect(call('update_reservation_passengers', { reservation_id: '4WQ150', passengers: [] })).toBe(
      'Error: Number of passengers does not match',
    );
    expect(
      call('update_reservation_baggages', {
        reservation_id: '4WQ150',
        total_baggages: 6,
        nonfree_baggages: 1,
        payment_id: 'certificate_x',
      }),
    ).toBe('Error: Payment method not found');
    expect(call('send_certificate', { user_id: 'mia_li_3668', amount: 50 })).toBe(
      'Certificate certificate_3221322 added to user mia_li_3668 with amount 50.',
    );
    expect(call('send_certificate', { user_id: 'mia_li_3668', amount: 1.5 })).toBe(
      'Error: amount: Input should be a valid integer',
    );
  });
});

describe('retailTools', () => {
  test('returns the 16 current tools and 15 for the 2025-06-10 release', () => {
    expect(domainSpec('retail').tools).toHaveLength(16);
    expect(domainSpec('retail', '2025-06-10').tools.map((t) => t.name)).not.toContain('get_item_details');
  });

  test('returns reference outputs, error messages and gift-card arithmetic', async () => {
    const spec = domainSpec('retail');
    const db = await newEpisodeDb(spec, dataDir());
    const call = (name: string, args: unknown): string => callTool(spec.tools, db, name, args).output;
    expect(call('find_user_id_by_email', { email: 'Noah.Brown7922@example.com' })).toBe('noah_brown_6181');
    expect(call('find_user_id_by_name_zip', { first_name: 'noah', last_name: 'BROWN', zip: '80279' })).toBe(
      'noah_brown_6181',
    );
    expect(call('find_user_id_by_email', { email: 'x@y.z' })).toBe('Error: User not found');
    expect(call('get_order_details', { order_id: 'W2611340' })).toBe('Error: Order not found');
    const order = call('get_order_details', { order_id: '#W2611340' });
    expect(order).toContain('"price": 47.84');
    expect(order).toMatch(/"cancel_reason": null, .*"return_payment_method_id": null}$/);
    expect(Object.keys(JSON.parse(call('list_all_product_types', {})) as object)).toHaveLength(fullOrSlice(50, 33));
    expect(call('get_item_details', { item_id: '6469567736' })).toMatch(/^\{"item_id": "6469567736"/);
    expect(call('cancel_pending_order', { order_id: '#W2611340', reason: 'bored' })).toBe(
      'Error: Non-pending order cannot be cancelled',
    );
    const pending = [...db.values('orders')].find(
      (o) => o.status === 'pending' && JSON.stringify(o.payment_history).includes('gift_card'),
    )!;
    const payment = (pending.payment_history as { amount: number; payment_method_id: string }[])[0]!;
    const balance = (): number =>
      (db.get('users', pending.user_id as string)!.payment_methods as Record<string, { balance: number }>)[
        payment.payment_method_id
      ]!.balance;
    const before = balance();
    const cancelled = JSON.parse(
      call('cancel_pending_order', { order_id: pending.order_id, reason: 'no longer needed' }),
    ) as { status: string; cancel_reason: string };
    expect([cancelled.status, cancelled.cancel_reason]).toStrictEqual(['cancelled', 'no longer needed']);
    expect(balance()).toBe(Math.round((before + payment.amount) * 100) / 100);
  });
});

describe('strandsTools', () => {
  test('returns a tool error as an error tool result the model sees', async () => {
    const spec = domainSpec('retail');
    const db = await newEpisodeDb(spec, dataDir());
    const getOrder = strandsTools(spec.tools, db).find((t) => t.name === 'get_order_details')!;
    expect(await runStrandsTool(getOrder, { order_id: '#nope' })).toStrictEqual({
      status: 'error',
      output: 'Error: Order not found',
    });
  });
});

describe('evaluateArithmetic', () => {
  test('returns Python precedence for powers, floor division and unary minus', () => {
    expect([
      evaluateArithmetic('-2**2'),
      evaluateArithmetic('7//2'),
      evaluateArithmetic('(1+2)*3'),
      evaluateArithmetic('2**-1'),
    ]).toStrictEqual([-4, 3, 9, 0.5]);
    expect(() => evaluateArithmetic('1/0')).toThrow('division by zero');
    expect(() => evaluateArithmetic('2 2')).toThrow('invalid syntax');
  });
});
