import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { dataDir } from '../../util/paths.js';
import { dbHash, sameState } from './db.js';
import { domainSpec, newEpisodeDb } from './domain.js';
import { callTool } from './tools/common.js';

/** sha256 of json.dumps(typed model_dump, sort_keys=True) computed by Python itself. */
function pythonHash(domain: string, patch: string): string {
  const script = `
import json, hashlib, sys
db = json.load(open(sys.argv[1]))
if sys.argv[2] == 'airline':
    for r in db['reservations'].values(): r.setdefault('status', None)
    for u in db['users'].values():
        for m in u['payment_methods'].values():
            if 'amount' in m: m['amount'] = float(m['amount'])
else:
    opt = ['cancel_reason','exchange_items','exchange_new_items','exchange_payment_method_id','exchange_price_difference','return_items','return_payment_method_id']
    for o in db['orders'].values():
        for k in opt: o.setdefault(k, None)
${patch}
print(hashlib.sha256(json.dumps(db, sort_keys=True, default=str).encode()).hexdigest())
`;
  return execFileSync(
    '/usr/bin/python3',
    ['-c', script, join(dataDir(), 'tau2', 'domains', domain, 'db.json'), domain],
    { encoding: 'utf8' },
  ).trim();
}

describe('dbHash', () => {
  test('returns the hash Python computes for the typed airline database, before and after a write', async () => {
    const spec = domainSpec('airline');
    const db = await newEpisodeDb(spec, dataDir());
    expect(dbHash(db)).toBe(pythonHash('airline', ''));
    expect(callTool(spec.tools, db, 'send_certificate', { user_id: 'mia_li_3668', amount: 100 }).status).toBe(
      'success',
    );
    const typed =
      "db['users']['mia_li_3668']['payment_methods']['certificate_3221322'] = {'source': 'certificate', 'id': 'certificate_3221322', 'amount': 100.0}";
    const untyped = typed.replace('100.0', '100');
    expect(dbHash(db)).toBe(pythonHash('airline', typed));
    expect(dbHash(db)).not.toBe(pythonHash('airline', untyped));
  });

  test('returns the hash Python computes for the typed retail database', async () => {
    const db = await newEpisodeDb(domainSpec('retail'), dataDir());
    expect(dbHash(db)).toBe(pythonHash('retail', ''));
  });
});

describe('EpisodeDb', () => {
  test('returns writes only to the episode that made them', async () => {
    const spec = domainSpec('airline');
    const first = await newEpisodeDb(spec, dataDir());
    const second = await newEpisodeDb(spec, dataDir());
    const before = JSON.stringify(first.get('reservations', 'Z7GOZK'));
    expect(callTool(spec.tools, first, 'cancel_reservation', { reservation_id: 'Z7GOZK' }).status).toBe('success');
    expect(first.get('reservations', 'Z7GOZK')!.status).toBe('cancelled');
    expect(JSON.stringify(second.get('reservations', 'Z7GOZK'))).toBe(before);
    expect(JSON.stringify(first.base.reservations!.Z7GOZK)).toBe(before);
    expect(sameState(first, second)).toBe(false);
    expect(callTool(spec.tools, second, 'cancel_reservation', { reservation_id: 'Z7GOZK' }).status).toBe('success');
    expect(sameState(first, second)).toBe(true);
    expect(dbHash(first)).toBe(dbHash(second));
  });

  test('rejects writes to the shared base', async () => {
    const db = await newEpisodeDb(domainSpec('retail'), dataDir());
    const order = db.get('orders', '#W2611340')!;
    expect(() => {
      order.status = 'cancelled';
    }).toThrow(TypeError);
  });

  test('returns keys in Python dict order with inserted records last', async () => {
    const spec = domainSpec('airline');
    const db = await newEpisodeDb(spec, dataDir());
    const booked = callTool(spec.tools, db, 'book_reservation', {
      user_id: 'mia_li_3668',
      origin: 'JFK',
      destination: 'LAX',
      flight_type: 'one_way',
      cabin: 'economy',
      flights: [],
      passengers: [{ first_name: 'Mia', last_name: 'Li', dob: '1990-04-05' }],
      payment_methods: [],
      total_baggages: 0,
      nonfree_baggages: 0,
      insurance: 'no',
    });
    expect(booked.status).toBe('success');
    const keys = [...db.keys('reservations')];
    expect(keys.at(-1)).toBe('HATHAT');
    expect(keys.length).toBe(Object.keys(db.base.reservations!).length + 1);
  });
});
