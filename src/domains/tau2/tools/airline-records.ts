/** The airline domain's data model and the record lookups and updates its tools share. */
import { z } from 'zod';
import type { DbRecord, DomainModel, EpisodeDb } from '../db.js';
import { foldForMatch, intArg } from './common.js';

/** Airline data model: certificate and gift-card balances are floats, everything else int. */
export const airlineModel: DomainModel = {
  domain: 'airline',
  tables: ['flights', 'users', 'reservations'],
  isFloat: (key, parent) => key === 'amount' && typeof parent.source === 'string',
  optionalFields: { reservations: ['status'] },
};

/** The reference's fixed "now" (policy: 2024-05-15 15:00 EST). */
export const NOW = '2024-05-15T15:00:00';
export const CABIN = z.enum(['business', 'economy', 'basic_economy']);
export const FLIGHT_INFO = z.object({
  flight_number: z.string().describe("Flight number, such as 'HAT001'."),
  date: z.string().describe("The date for the flight in the format 'YYYY-MM-DD', such as '2024-05-01'."),
});
export const PASSENGER = z.object({
  first_name: z.string().describe("Passenger's first name"),
  last_name: z.string().describe("Passenger's last name"),
  dob: z.string().describe('Date of birth in YYYY-MM-DD format'),
});
export const PAYMENT = z.object({
  payment_id: z.string().describe('Unique identifier for the payment'),
  amount: intArg('Payment amount in dollars'),
});
export const PAYMENT_ID_TEXT =
  "The payment id stored in user profile, such as 'credit_card_7815826', 'gift_card_7815826', 'certificate_7815826'.";

/** Resolve a key exactly, then stripped, then case- and accent-folded, as the reference does. */
export function resolveKey(db: EpisodeDb, table: string, key: string): string | undefined {
  if (db.has(table, key)) return key;
  if (db.has(table, key.trim())) return key.trim();
  const folded = foldForMatch(key);
  for (const candidate of db.keys(table)) if (foldForMatch(candidate) === folded) return candidate;
  return undefined;
}

export function userKey(db: EpisodeDb, userId: string): string {
  const key = resolveKey(db, 'users', userId);
  if (key === undefined) throw new Error(`User ${userId} not found`);
  return key;
}

export function reservationKey(db: EpisodeDb, reservationId: string): string {
  const key = resolveKey(db, 'reservations', reservationId);
  if (key === undefined) throw new Error(`Reservation ${reservationId} not found`);
  return key;
}

export function flight(db: EpisodeDb, flightNumber: string): DbRecord {
  const key = resolveKey(db, 'flights', flightNumber);
  if (key === undefined) throw new Error(`Flight ${flightNumber} not found`);
  return db.get('flights', key)!;
}

export function flightInstance(db: EpisodeDb, flightNumber: string, date: string): DbRecord {
  const dates = flight(db, flightNumber).dates as Record<string, DbRecord>;
  if (!(date in dates)) throw new Error(`Flight ${flightNumber} not found on date ${date}`);
  return dates[date]!;
}

export type Seats = Record<string, number>;

export function searchDirect(
  db: EpisodeDb,
  date: string,
  origin?: string,
  destination?: string,
  leaveAfter?: string,
): DbRecord[] {
  const results: DbRecord[] = [];
  for (const f of db.values('flights')) {
    const instance = (f.dates as Record<string, DbRecord>)[date];
    const ok =
      (origin === undefined || f.origin === origin) &&
      (destination === undefined || f.destination === destination) &&
      instance?.status === 'available' &&
      (leaveAfter === undefined || (f.scheduled_departure_time_est as string) >= leaveAfter);
    if (!ok) continue;
    results.push({
      flight_number: f.flight_number,
      origin: f.origin,
      destination: f.destination,
      status: 'available',
      scheduled_departure_time_est: f.scheduled_departure_time_est,
      scheduled_arrival_time_est: f.scheduled_arrival_time_est,
      date: null,
      available_seats: instance!.available_seats,
      prices: instance!.prices,
    });
  }
  return results;
}

/** Charge an update to a stored payment method; a gift card pays at once, a certificate cannot. */
function paymentForUpdate(db: EpisodeDb, userId: string, paymentId: string, totalPrice: number): DbRecord | undefined {
  const methods = db.get('users', userId)!.payment_methods as Record<string, DbRecord>;
  const method = methods[paymentId];
  if (!method) throw new Error('Payment method not found');
  if (method.source === 'certificate') throw new Error('Certificate cannot be used to update reservation');
  if (method.source === 'gift_card' && (method.amount as number) < totalPrice)
    throw new Error('Gift card balance is not enough');
  if (method.source === 'gift_card') {
    const editable = (db.edit('users', userId).payment_methods as Record<string, DbRecord>)[paymentId]!;
    editable.amount = (editable.amount as number) - totalPrice;
  }
  return totalPrice !== 0 ? { payment_id: paymentId, amount: totalPrice } : undefined;
}

/** Charge an update's price to the reservation's user, then apply `change` to the reservation. */
export function chargeAndUpdate(
  db: EpisodeDb,
  key: string,
  paymentId: string,
  totalPrice: number,
  change: (reservation: DbRecord) => void,
): string {
  const uid = userKey(db, db.get('reservations', key)!.user_id as string);
  const payment = paymentForUpdate(db, uid, paymentId, totalPrice);
  const reservation = db.edit('reservations', key);
  if (payment) (reservation.payment_history as DbRecord[]).push(payment);
  change(reservation);
  return db.dump(reservation);
}
