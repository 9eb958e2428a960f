import { execFileSync } from 'node:child_process';
import { deflateSync } from 'node:zlib';
import { describe, expect, test } from 'vitest';
import { InputError } from '../errors/index.js';
import { decodeLcbPrivateTests, unpickleString } from './lcb-pickle.js';

/** Pickles `text` with CPython's own pickle at `protocol`, returned as bytes. */
function pythonPickle(text: string, protocol: number): Buffer {
  const script =
    'import pickle, sys; sys.stdout.buffer.write(pickle.dumps(sys.stdin.read(), protocol=int(sys.argv[1])))';
  return execFileSync('/usr/bin/python3', ['-c', script, String(protocol)], { input: text });
}

describe('unpickleString', () => {
  test('returns the string of a hand-built protocol-4 pickle (PROTO, FRAME, SHORT_BINUNICODE, MEMOIZE, STOP)', () => {
    const body = Buffer.concat([Buffer.from([0x8c, 2]), Buffer.from('hi'), Buffer.from([0x94, 0x2e])]);
    const frame = Buffer.alloc(9);
    frame[0] = 0x95;
    frame.writeBigUInt64LE(BigInt(body.length), 1);
    expect(unpickleString(Buffer.concat([Buffer.from([0x80, 4]), frame, body]))).toBe('hi');
  });

  test('returns the string of a hand-built BINUNICODE and BINUNICODE8 pickle with BINPUT', () => {
    const text = Buffer.from('héllo');
    const len4 = Buffer.alloc(4);
    len4.writeUInt32LE(text.length);
    expect(
      unpickleString(Buffer.concat([Buffer.from([0x80, 2, 0x58]), len4, text, Buffer.from([0x71, 0, 0x2e])])),
    ).toBe('héllo');
    const len8 = Buffer.alloc(8);
    len8.writeBigUInt64LE(BigInt(text.length));
    expect(unpickleString(Buffer.concat([Buffer.from([0x80, 5, 0x8d]), len8, text, Buffer.from([0x2e])]))).toBe(
      'héllo',
    );
  });

  test('returns the string of pickles CPython makes with protocols 1 to 5, short and long', () => {
    const long = JSON.stringify([{ input: 'x'.repeat(70_000), output: 'ü', testtype: 'stdin' }]);
    for (const protocol of [1, 2, 3, 4, 5]) {
      expect(unpickleString(pythonPickle('short', protocol))).toBe('short');
      expect(unpickleString(pythonPickle(long, protocol))).toBe(long);
    }
  });

  test('rejects a pickle that would call os.system, without running it', () => {
    const hostile = Buffer.from("cos\nsystem\n(S'touch /tmp/atk-pwned'\ntR.", 'latin1');
    expect(() => unpickleString(hostile)).toThrow(/refused opcode 0x63 \("c"\) at offset 0/);
    const viaPython = execFileSync('/usr/bin/python3', [
      '-c',
      'import pickle, os, sys; sys.stdout.buffer.write(pickle.dumps(os.getcwd, protocol=4))',
    ]);
    expect(() => unpickleString(viaPython)).toThrow(InputError);
  });

  test('rejects protocol 0 text pickles, lists, two strings and truncated data', () => {
    expect(() => unpickleString(pythonPickle('x', 0))).toThrow(/refused opcode/);
    const list = execFileSync('/usr/bin/python3', [
      '-c',
      'import pickle, sys; sys.stdout.buffer.write(pickle.dumps(["a"], protocol=4))',
    ]);
    expect(() => unpickleString(list)).toThrow(/refused opcode/);
    expect(() => unpickleString(Buffer.from([0x80, 4, 0x8c, 1, 0x61, 0x8c, 1, 0x62, 0x2e]))).toThrow(/second value/);
    expect(() => unpickleString(Buffer.from([0x80, 4, 0x8c, 9, 0x61]))).toThrow(/truncated string/);
  });
});

describe('decodeLcbPrivateTests', () => {
  test('returns normalised tests from base64(zlib(pickle(json)))', () => {
    const tests = [
      { input: '1 2\n', output: '3\n', testtype: 'stdin' },
      { input: '[1, 2]\n3', output: '[0, 1]', testtype: 'functional' },
    ];
    const encoded = deflateSync(pythonPickle(JSON.stringify(tests), 4)).toString('base64');
    expect(decodeLcbPrivateTests(encoded, 'twoSum')).toStrictEqual([
      { input: '1 2\n', output: '3\n', kind: 'stdin' },
      { input: '[1, 2]\n3', output: '[0, 1]', kind: 'functional' },
    ]);
  });

  test('rejects data that is not zlib', () => {
    expect(() => decodeLcbPrivateTests(Buffer.from('plain').toString('base64'))).toThrow(/not zlib data/);
  });
});
