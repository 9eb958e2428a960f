import { inflateSync } from 'node:zlib';
import { InputError } from '../errors/index.js';
import { normalizeCodeTests, parseJson, type CodeTest } from './code-tests.js';

/**
 * Decodes LiveCodeBench's `private_test_cases`: base64 -> zlib -> pickle of one JSON string ->
 * JSON list of `{input, output, testtype}`. The pickle is read by `unpickleString`, which
 * accepts only a pickled `str` and never executes anything.
 * @throws InputError when any layer is malformed or the pickle holds anything but a string.
 */
export function decodeLcbPrivateTests(encoded: string, fnName?: string): CodeTest[] {
  const compressed = Buffer.from(encoded, 'base64');
  let pickled: Buffer;
  try {
    // Private tests are large but bounded; the cap stops a decompression bomb.
    pickled = inflateSync(compressed, { maxOutputLength: 1 << 30 });
  } catch (error) {
    throw new InputError(`LiveCodeBench private tests: not zlib data (${(error as Error).message})`);
  }
  return normalizeCodeTests(parseJson(unpickleString(pickled), 'LiveCodeBench private tests'), fnName).tests;
}

const OP = {
  PROTO: 0x80,
  FRAME: 0x95,
  SHORT_BINUNICODE: 0x8c,
  BINUNICODE: 0x58, // 'X'
  BINUNICODE8: 0x8d,
  MEMOIZE: 0x94,
  BINPUT: 0x71, // 'q'
  LONG_BINPUT: 0x72, // 'r'
  STOP: 0x2e, // '.'
} as const;

/**
 * Reads a pickle (protocol 1-5) whose only content is one `str`: PROTO, FRAME, the three
 * BINUNICODE forms, memo stores and STOP. Every other opcode — globals, reduce, builds, other
 * types — is refused, so a hostile pickle can do nothing but fail.
 * @throws InputError naming the first refused opcode and its offset.
 */
export function unpickleString(data: Uint8Array): string {
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  let pos = 0;
  let value: string | undefined;
  const need = (n: number, what: string): void => {
    if (pos + n > bytes.length) throw new InputError(`pickle: truncated ${what} at offset ${pos}`);
  };
  while (pos < bytes.length) {
    const op = bytes[pos];
    const at = pos;
    pos += 1;
    switch (op) {
      case OP.PROTO:
        need(1, 'PROTO');
        if (bytes[pos] > 5) throw new InputError(`pickle: unsupported protocol ${bytes[pos]}`);
        pos += 1;
        break;
      case OP.FRAME:
        need(8, 'FRAME');
        pos += 8; // frames only group opcodes; their contents follow inline
        break;
      case OP.MEMOIZE:
        break;
      case OP.BINPUT:
        need(1, 'BINPUT');
        pos += 1;
        break;
      case OP.LONG_BINPUT:
        need(4, 'LONG_BINPUT');
        pos += 4;
        break;
      case OP.SHORT_BINUNICODE:
      case OP.BINUNICODE:
      case OP.BINUNICODE8: {
        if (value !== undefined)
          throw new InputError(`pickle: second value at offset ${at}; only one string is accepted`);
        const width = op === OP.SHORT_BINUNICODE ? 1 : op === OP.BINUNICODE ? 4 : 8;
        need(width, 'string length');
        const length =
          width === 1 ? bytes[pos] : width === 4 ? bytes.readUInt32LE(pos) : Number(bytes.readBigUInt64LE(pos));
        pos += width;
        need(length, 'string');
        value = bytes.toString('utf8', pos, pos + length);
        pos += length;
        break;
      }
      case OP.STOP:
        if (value === undefined) throw new InputError('pickle: STOP before any string');
        if (pos !== bytes.length) throw new InputError(`pickle: ${bytes.length - pos} bytes after STOP`);
        return value;
      default:
        throw new InputError(
          `pickle: refused opcode 0x${op.toString(16).padStart(2, '0')} (${JSON.stringify(String.fromCharCode(op))}) at offset ${at}`,
          {
            hint: 'only a pickled str is accepted; pickles are never executed',
          },
        );
    }
  }
  throw new InputError('pickle: no STOP opcode');
}
