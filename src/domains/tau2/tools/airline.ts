import { z } from 'zod';
import type { DbRecord } from '../db.js';
import { calculateTool, defineTool, intArg, transferTool, type DomainTool } from './common.js';
import {
  NOW,
  CABIN,
  FLIGHT_INFO,
  PASSENGER,
  PAYMENT,
  PAYMENT_ID_TEXT,
  resolveKey,
  userKey,
  reservationKey,
  flight,
  flightInstance,
  searchDirect,
  chargeAndUpdate,
  type Seats,
} from './airline-records.js';

const bookReservation = defineTool({
  name: 'book_reservation',
  description: 'Book a reservation.',
  schema: z.object({
    user_id: z.string().describe("The ID of the user to book the reservation such as 'sara_doe_496'`."),
    origin: z.string().describe("The IATA code for the origin city such as 'SFO'."),
    destination: z.string().describe("The IATA code for the destination city such as 'JFK'."),
    flight_type: z.enum(['round_trip', 'one_way']).describe("The type of flight such as 'one_way' or 'round_trip'."),
    cabin: CABIN.describe("The cabin class such as 'basic_economy', 'economy', or 'business'."),
    flights: z.array(FLIGHT_INFO).describe('An array of objects containing details about each piece of flight.'),
    passengers: z.array(PASSENGER).describe('An array of objects containing details about each passenger.'),
    payment_methods: z.array(PAYMENT).describe('An array of objects containing details about each payment method.'),
    total_baggages: intArg('The total number of baggage items to book the reservation.'),
    nonfree_baggages: intArg('The number of non-free baggage items to book the reservation.'),
    insurance: z.enum(['yes', 'no']).describe('Whether the reservation has insurance.'),
  }),
  mutates: true,
  run: (db, a) => {
    const uid = userKey(db, a.user_id);
    const user = db.get('users', uid)!;
    const reservationId = ['HATHAT', 'HATHAU', 'HATHAV'].find((id) => !db.has('reservations', id));
    if (reservationId === undefined) throw new Error('Too many reservations');
    const reservationFlights: DbRecord[] = [];
    const seatUpdates: { key: string; date: string }[] = [];
    let totalPrice = 0;
    for (const info of a.flights) {
      const f = flight(db, info.flight_number);
      const flightNumber = f.flight_number as string;
      const instance = flightInstance(db, flightNumber, info.date);
      if (instance.status !== 'available') throw new Error(`Flight ${flightNumber} not available on date ${info.date}`);
      if ((instance.available_seats as Seats)[a.cabin]! < a.passengers.length)
        throw new Error(`Not enough seats on flight ${flightNumber}`);
      const price = (instance.prices as Seats)[a.cabin]!;
      reservationFlights.push({
        origin: f.origin,
        destination: f.destination,
        flight_number: flightNumber,
        date: info.date,
        price,
      });
      seatUpdates.push({ key: resolveKey(db, 'flights', flightNumber)!, date: info.date });
      totalPrice += price * a.passengers.length;
    }
    if (a.insurance === 'yes') totalPrice += 30 * a.passengers.length;
    totalPrice += 50 * a.nonfree_baggages;
    const methods = user.payment_methods as Record<string, DbRecord>;
    for (const payment of a.payment_methods) {
      const method = methods[payment.payment_id];
      if (!method) throw new Error(`Payment method ${payment.payment_id} not found`);
      if (
        (method.source === 'gift_card' || method.source === 'certificate') &&
        (method.amount as number) < payment.amount
      ) {
        throw new Error(`Not enough balance in payment method ${payment.payment_id}`);
      }
    }
    const totalPayment = a.payment_methods.reduce((sum, p) => sum + p.amount, 0);
    if (totalPayment !== totalPrice)
      throw new Error(`Payment amount does not add up, total price is ${totalPrice}, but paid ${totalPayment}`);
    const editableUser = db.edit('users', uid);
    const editableMethods = editableUser.payment_methods as Record<string, DbRecord>;
    for (const payment of a.payment_methods) {
      const method = editableMethods[payment.payment_id]!;
      if (method.source === 'gift_card') method.amount = (method.amount as number) - payment.amount;
      else if (method.source === 'certificate') delete editableMethods[payment.payment_id];
    }
    for (const { key, date } of seatUpdates) {
      const seats = (db.edit('flights', key).dates as Record<string, DbRecord>)[date]!.available_seats as Seats;
      seats[a.cabin] = seats[a.cabin]! - a.passengers.length;
    }
    const reservation: DbRecord = {
      reservation_id: reservationId,
      user_id: user.user_id,
      origin: a.origin,
      destination: a.destination,
      flight_type: a.flight_type,
      cabin: a.cabin,
      flights: reservationFlights,
      passengers: structuredClone(a.passengers),
      payment_history: structuredClone(a.payment_methods),
      created_at: NOW,
      total_baggages: a.total_baggages,
      nonfree_baggages: a.nonfree_baggages,
      insurance: a.insurance,
      status: null,
    };
    db.insert('reservations', reservationId, reservation);
    (editableUser.reservations as string[]).push(reservationId);
    return db.dump(reservation);
  },
});

const cancelReservation = defineTool({
  name: 'cancel_reservation',
  description: 'Cancel the whole reservation.',
  schema: z.object({ reservation_id: z.string().describe("The reservation ID, such as 'ZFA04Y'.") }),
  mutates: true,
  run: (db, { reservation_id }) => {
    const reservation = db.edit('reservations', reservationKey(db, reservation_id));
    const history = reservation.payment_history as DbRecord[];
    const refunds = history.map((p) => ({ payment_id: p.payment_id, amount: -(p.amount as number) }));
    history.push(...refunds);
    reservation.status = 'cancelled';
    return db.dump(reservation);
  },
});

const getReservationDetails = defineTool({
  name: 'get_reservation_details',
  description: 'Get the details of a reservation.',
  schema: z.object({ reservation_id: z.string().describe("The reservation ID, such as '8JX2WO'.") }),
  mutates: false,
  run: (db, { reservation_id }) => db.dump(db.get('reservations', reservationKey(db, reservation_id))),
});

const getUserDetails = defineTool({
  name: 'get_user_details',
  description: 'Get the details of a user, including their reservations.',
  schema: z.object({ user_id: z.string().describe("The user ID, such as 'sara_doe_496'.") }),
  mutates: false,
  run: (db, { user_id }) => db.dump(db.get('users', userKey(db, user_id))),
});

const AIRPORTS: readonly [string, string][] = [
  ['SFO', 'San Francisco'],
  ['JFK', 'New York'],
  ['LAX', 'Los Angeles'],
  ['ORD', 'Chicago'],
  ['DFW', 'Dallas'],
  ['DEN', 'Denver'],
  ['SEA', 'Seattle'],
  ['ATL', 'Atlanta'],
  ['MIA', 'Miami'],
  ['BOS', 'Boston'],
  ['PHX', 'Phoenix'],
  ['IAH', 'Houston'],
  ['LAS', 'Las Vegas'],
  ['MCO', 'Orlando'],
  ['EWR', 'Newark'],
  ['CLT', 'Charlotte'],
  ['MSP', 'Minneapolis'],
  ['DTW', 'Detroit'],
  ['PHL', 'Philadelphia'],
  ['LGA', 'LaGuardia'],
];

const listAllAirports = defineTool({
  name: 'list_all_airports',
  description: 'Returns a list of all available airports.',
  schema: z.object({}),
  mutates: false,
  run: (db) => db.dump(AIRPORTS.map(([iata, city]) => ({ iata, city }))),
});

const ORIGIN_TEXT = "The origin city airport in three letters, such as 'JFK'.";
const DESTINATION_TEXT = "The destination city airport in three letters, such as 'LAX'.";

const searchDirectFlight = defineTool({
  name: 'search_direct_flight',
  description: 'Search for direct flights between two cities on a specific date.',
  schema: z.object({
    origin: z.string().describe(ORIGIN_TEXT),
    destination: z.string().describe(DESTINATION_TEXT),
    date: z.string().describe("The date of the flight in the format 'YYYY-MM-DD', such as '2024-01-01'."),
  }),
  mutates: false,
  run: (db, a) => db.dump(searchDirect(db, a.date, a.origin, a.destination)),
});

const searchOnestopFlight = defineTool({
  name: 'search_onestop_flight',
  description: 'Search for one-stop flights between two cities on a specific date.',
  schema: z.object({
    origin: z.string().describe(ORIGIN_TEXT),
    destination: z.string().describe(DESTINATION_TEXT),
    date: z.string().describe("The date of the flight in the format 'YYYY-MM-DD', such as '2024-05-01'."),
  }),
  mutates: false,
  run: (db, a) => {
    const results: DbRecord[][] = [];
    for (const first of searchDirect(db, a.date, a.origin)) {
      first.date = a.date;
      // The reference builds the next day without zero padding ("2024-05-6"); kept for identical results.
      const day = Number.parseInt(a.date.slice(-2), 10);
      if (Number.isNaN(day)) throw new Error(`invalid literal for int() with base 10: '${a.date.slice(-2)}'`);
      const date2 = (first.scheduled_arrival_time_est as string).includes('+1') ? `2024-05-${day + 1}` : a.date;
      for (const second of searchDirect(
        db,
        date2,
        first.destination as string,
        a.destination,
        first.scheduled_arrival_time_est as string,
      )) {
        second.date = date2;
        results.push([first, second]);
      }
    }
    return db.dump(results);
  },
});

const sendCertificate = defineTool({
  name: 'send_certificate',
  description: 'Send a certificate to a user. Be careful!',
  schema: z.object({
    user_id: z.string().describe("The ID of the user to book the reservation, such as 'sara_doe_496'."),
    amount: intArg('The amount of the certificate to send.'),
  }),
  mutates: true,
  run: (db, { user_id, amount }) => {
    const uid = userKey(db, user_id);
    const methods = db.get('users', uid)!.payment_methods as Record<string, DbRecord>;
    for (const id of [3221322, 3221323, 3221324]) {
      const paymentId = `certificate_${id}`;
      if (paymentId in methods) continue;
      (db.edit('users', uid).payment_methods as Record<string, DbRecord>)[paymentId] = {
        source: 'certificate',
        id: paymentId,
        amount,
      };
      return `Certificate ${paymentId} added to user ${user_id} with amount ${amount}.`;
    }
    throw new Error('Too many certificates');
  },
});

const updateReservationBaggages = defineTool({
  name: 'update_reservation_baggages',
  description: 'Update the baggage information of a reservation.',
  schema: z.object({
    reservation_id: z.string().describe("The reservation ID, such as 'ZFA04Y'"),
    total_baggages: intArg('The updated total number of baggage items included in the reservation.'),
    nonfree_baggages: intArg('The updated number of non-free baggage items included in the reservation.'),
    payment_id: z.string().describe(PAYMENT_ID_TEXT),
  }),
  mutates: true,
  run: (db, a) => {
    const key = reservationKey(db, a.reservation_id);
    userKey(db, db.get('reservations', key)!.user_id as string);
    const totalPrice = 50 * Math.max(0, a.nonfree_baggages - (db.get('reservations', key)!.nonfree_baggages as number));
    return chargeAndUpdate(db, key, a.payment_id, totalPrice, (reservation) => {
      reservation.total_baggages = a.total_baggages;
      reservation.nonfree_baggages = a.nonfree_baggages;
    });
  },
});

const updateReservationFlights = defineTool({
  name: 'update_reservation_flights',
  description: 'Update the flight information of a reservation.',
  schema: z.object({
    reservation_id: z.string().describe("The reservation ID, such as 'ZFA04Y'."),
    cabin: CABIN.describe('The cabin class of the reservation'),
    flights: z
      .array(FLIGHT_INFO)
      .describe(
        'An array of objects containing details about each piece of flight in the ENTIRE new reservation. Even if the a flight segment is not changed, it should still be included in the array.',
      ),
    payment_id: z.string().describe(PAYMENT_ID_TEXT),
  }),
  mutates: true,
  run: (db, a) => {
    const key = reservationKey(db, a.reservation_id);
    const current = db.get('reservations', key)!;
    userKey(db, current.user_id as string);
    const passengers = (current.passengers as unknown[]).length;
    const oldFlights = current.flights as DbRecord[];
    let totalPrice = 0;
    const newFlights: DbRecord[] = [];
    for (const info of a.flights) {
      const f = flight(db, info.flight_number);
      const flightNumber = f.flight_number as string;
      const kept = oldFlights.find(
        (rf) => rf.flight_number === flightNumber && rf.date === info.date && a.cabin === current.cabin,
      );
      if (kept) {
        totalPrice += (kept.price as number) * passengers;
        newFlights.push(structuredClone(kept));
        continue;
      }
      const instance = flightInstance(db, flightNumber, info.date);
      if (instance.status !== 'available') throw new Error(`Flight ${flightNumber} not available on date ${info.date}`);
      if ((instance.available_seats as Seats)[a.cabin]! < passengers)
        throw new Error(`Not enough seats on flight ${flightNumber}`);
      const price = (instance.prices as Seats)[a.cabin]!;
      newFlights.push({
        origin: f.origin,
        destination: f.destination,
        flight_number: flightNumber,
        date: info.date,
        price,
      });
      totalPrice += price * passengers;
    }
    totalPrice -= oldFlights.reduce((sum, rf) => sum + (rf.price as number), 0) * passengers;
    return chargeAndUpdate(db, key, a.payment_id, totalPrice, (reservation) => {
      reservation.flights = newFlights;
      reservation.cabin = a.cabin;
    });
  },
});

const updateReservationPassengers = defineTool({
  name: 'update_reservation_passengers',
  description: 'Update the passenger information of a reservation.',
  schema: z.object({
    reservation_id: z.string().describe("The reservation ID, such as 'ZFA04Y'."),
    passengers: z.array(PASSENGER).describe('An array of objects containing details about each passenger.'),
  }),
  mutates: true,
  run: (db, a) => {
    const key = reservationKey(db, a.reservation_id);
    if (a.passengers.length !== (db.get('reservations', key)!.passengers as unknown[]).length) {
      throw new Error('Number of passengers does not match');
    }
    const reservation = db.edit('reservations', key);
    reservation.passengers = structuredClone(a.passengers);
    return db.dump(reservation);
  },
});

const getFlightStatus = defineTool({
  name: 'get_flight_status',
  description: 'Get the status of a flight.',
  schema: z.object({
    flight_number: z.string().describe('The flight number.'),
    date: z.string().describe('The date of the flight.'),
  }),
  mutates: false,
  run: (db, a) => flightInstance(db, a.flight_number, a.date).status as string,
});

/** The 14 airline agent tools, in the reference's order. */
export const airlineTools: readonly DomainTool[] = [
  bookReservation,
  calculateTool,
  cancelReservation,
  getReservationDetails,
  getUserDetails,
  listAllAirports,
  searchDirectFlight,
  searchOnestopFlight,
  sendCertificate,
  transferTool,
  updateReservationBaggages,
  updateReservationFlights,
  updateReservationPassengers,
  getFlightStatus,
];
