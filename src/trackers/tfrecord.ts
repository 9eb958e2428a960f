/**
 * TensorBoard's event file format, written by hand: a TFRecord stream (each record is its length
 * as a little-endian uint64, the masked CRC-32C of those 8 bytes, the data, the masked CRC-32C of
 * the data) whose records are `tensorflow.Event` protobuf messages. Only the fields a scalar
 * summary needs are encoded: Event{wall_time=1 double, step=2 int64, file_version=3 string,
 * summary=5 Summary}, Summary{value=1 repeated Value}, Value{tag=1 string, simple_value=2 float}.
 */

/** The first record of every event file; TensorBoard reads nothing else of a file without it. */
export function fileVersionEvent(wallTime: number): Buffer {
  return message([field(1, 1, double(wallTime)), field(3, 2, lengthDelimited(Buffer.from('brain.Event:2')))]);
}

/** One Event carrying one scalar summary value. */
export function scalarEvent(wallTime: number, step: number, tag: string, value: number): Buffer {
  const summaryValue = message([field(1, 2, lengthDelimited(Buffer.from(tag, 'utf8'))), field(2, 5, float(value))]);
  const summary = message([field(1, 2, lengthDelimited(summaryValue))]);
  return message([
    field(1, 1, double(wallTime)),
    field(2, 0, varint(BigInt(Math.trunc(step)))),
    field(5, 2, lengthDelimited(summary)),
  ]);
}

/** Frame `data` as one TFRecord. */
export function tfRecord(data: Buffer): Buffer {
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(data.length));
  const lengthCrc = Buffer.alloc(4);
  lengthCrc.writeUInt32LE(maskedCrc32c(length));
  const dataCrc = Buffer.alloc(4);
  dataCrc.writeUInt32LE(maskedCrc32c(data));
  return Buffer.concat([length, lengthCrc, data, dataCrc]);
}

/** CRC-32C rotated and offset as TFRecord stores it (so a CRC of data holding CRCs stays informative). */
export function maskedCrc32c(data: Uint8Array): number {
  const crc = crc32c(data);
  return (((crc >>> 15) | (crc << 17)) + 0xa282ead8) >>> 0;
}

const CRC32C_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32C (Castagnoli polynomial, reflected 0x82F63B78), the checksum TFRecord uses. */
export function crc32c(data: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of data) crc = CRC32C_TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** A protobuf field: its key (number << 3 | wire type) then the encoded payload. */
function field(number: number, wireType: 0 | 1 | 2 | 5, payload: Buffer): Buffer {
  return Buffer.concat([varint(BigInt((number << 3) | wireType)), payload]);
}

function message(fields: readonly Buffer[]): Buffer {
  return Buffer.concat(fields);
}

function lengthDelimited(bytes: Buffer): Buffer {
  return Buffer.concat([varint(BigInt(bytes.length)), bytes]);
}

/** Base-128 varint; a negative int64 is its two's complement over 64 bits, as protobuf encodes it. */
function varint(value: bigint): Buffer {
  let v = BigInt.asUintN(64, value);
  const bytes: number[] = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) byte |= 0x80;
    bytes.push(byte);
  } while (v > 0n);
  return Buffer.from(bytes);
}

function double(value: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeDoubleLE(value);
  return b;
}

function float(value: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeFloatLE(value);
  return b;
}
