import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * An event file reader written apart from atk's writer, for the tests: TFRecord frames checked
 * with a bit-by-bit CRC-32C (no table, unlike the writer), protobuf decoded from the wire format
 * by field number, per tensorflow/core/util/event.proto and summary.proto.
 */
export interface ReadEvent {
  readonly wallTime: number;
  readonly step: number;
  readonly fileVersion?: string;
  readonly values: ReadonlyArray<{ readonly tag: string; readonly simpleValue: number }>;
}

/** Every event of every `events.out.tfevents.*` file under `dir`, in file then record order. */
export function readEventDir(dir: string): ReadEvent[] {
  return readdirSync(dir)
    .filter((f) => f.startsWith('events.out.tfevents.'))
    .sort()
    .flatMap((f) => readEventFile(join(dir, f)));
}

/** @throws Error on a bad frame or checksum. */
export function readEventFile(path: string): ReadEvent[] {
  const bytes = readFileSync(path);
  const events: ReadEvent[] = [];
  let at = 0;
  while (at < bytes.length) {
    const lengthBytes = bytes.subarray(at, at + 8);
    if (bytes.readUInt32LE(at + 8) !== masked(lengthBytes)) throw new Error(`bad length crc at ${at}`);
    const length = Number(bytes.readBigUInt64LE(at));
    const data = bytes.subarray(at + 12, at + 12 + length);
    if (bytes.readUInt32LE(at + 12 + length) !== masked(data)) throw new Error(`bad data crc at ${at}`);
    events.push(decodeEvent(data));
    at += 12 + length + 4;
  }
  return events;
}

function decodeEvent(data: Buffer): ReadEvent {
  let wallTime = Number.NaN;
  let step = 0;
  let fileVersion: string | undefined;
  const values: Array<{ tag: string; simpleValue: number }> = [];
  for (const f of fields(data)) {
    if (f.number === 1 && f.wire === 1) wallTime = f.bytes.readDoubleLE(0);
    else if (f.number === 2 && f.wire === 0) step = Number(BigInt.asIntN(64, f.varint));
    else if (f.number === 3 && f.wire === 2) fileVersion = f.bytes.toString('utf8');
    else if (f.number === 5 && f.wire === 2) {
      for (const v of fields(f.bytes)) {
        if (v.number !== 1 || v.wire !== 2) continue;
        let tag = '';
        let simpleValue = Number.NaN;
        for (const x of fields(v.bytes)) {
          if (x.number === 1 && x.wire === 2) tag = x.bytes.toString('utf8');
          if (x.number === 2 && x.wire === 5) simpleValue = x.bytes.readFloatLE(0);
        }
        values.push({ tag, simpleValue });
      }
    }
  }
  return { wallTime, step, ...(fileVersion === undefined ? {} : { fileVersion }), values };
}

interface WireField {
  readonly number: number;
  readonly wire: number;
  readonly varint: bigint;
  readonly bytes: Buffer;
}

function fields(data: Buffer): WireField[] {
  const out: WireField[] = [];
  let at = 0;
  const readVarint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const byte = data[at++]!;
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (at < data.length) {
    const key = Number(readVarint());
    const wire = key & 7;
    const number = key >>> 3;
    if (wire === 0) out.push({ number, wire, varint: readVarint(), bytes: Buffer.alloc(0) });
    else if (wire === 1 || wire === 5) {
      const size = wire === 1 ? 8 : 4;
      out.push({ number, wire, varint: 0n, bytes: data.subarray(at, at + size) });
      at += size;
    } else if (wire === 2) {
      const size = Number(readVarint());
      out.push({ number, wire, varint: 0n, bytes: data.subarray(at, at + size) });
      at += size;
    } else throw new Error(`unsupported wire type ${wire}`);
  }
  return out;
}

function masked(data: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of data) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  }
  crc = (crc ^ 0xffffffff) >>> 0;
  return ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) % 2 ** 32;
}
