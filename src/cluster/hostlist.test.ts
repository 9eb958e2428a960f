import { describe, expect, test } from 'vitest';
import { InputError } from '../errors/index.js';
import { expandHostlist } from './hostlist.js';

describe('expandHostlist', () => {
  test('returns the hosts of ranges, lists and plain names in Slurm order', () => {
    expect(expandHostlist('n[1-3],m4')).toStrictEqual(['n1', 'n2', 'n3', 'm4']);
    expect(expandHostlist('gpu[08-10]-ib')).toStrictEqual(['gpu08-ib', 'gpu09-ib', 'gpu10-ib']);
    expect(expandHostlist('r[1-2]n[1,3]')).toStrictEqual(['r1n1', 'r1n3', 'r2n1', 'r2n3']);
    expect(expandHostlist('n[1,4-5],login')).toStrictEqual(['n1', 'n4', 'n5', 'login']);
  });

  test('rejects unbalanced brackets and backwards ranges with the hostlist named', () => {
    expect(() => expandHostlist('n[1-3')).toThrow(
      new InputError('hostlist "n[1-3": unclosed [ in n[1-3', { hint: 'write it as Slurm does, e.g. n[1-3],m4' }),
    );
    expect(() => expandHostlist('n[3-1]')).toThrow(/hostlist "n\[3-1\]": range 3-1 runs backwards/);
    expect(() => expandHostlist('n[a]')).toThrow(/bad range a/);
  });
});
