import { describe, expect, test } from 'vitest';
import { tickLabels, valueLabel } from '../viewer/axis-labels.js';

describe('tickLabels', () => {
  test('returns scientific notation for ticks around 1e-7, each distinct', () => {
    expect(tickLabels([0, 5e-8, 1e-7, 1.5e-7, 2.5e-7])).toStrictEqual(['0', '5e-8', '1e-7', '1.5e-7', '2.5e-7']);
    // Float noise from the axis's arithmetic does not leak into the labels.
    expect(tickLabels([0.8e-7, 0.9e-7, 0.1e-6 + 0.2e-7 - 0.2e-7, 1.1e-7])).toStrictEqual([
      '8e-8',
      '9e-8',
      '1e-7',
      '1.1e-7',
    ]);
  });

  test('returns scientific notation for large ticks, and plain numbers with the decimals they need otherwise', () => {
    expect(tickLabels([0, 2e6, 4e6])).toStrictEqual(['0', '2e6', '4e6']);
    expect(tickLabels([0.1 + 0.2, 0.5, 1, 1.5])).toStrictEqual(['0.3', '0.5', '1', '1.5']);
    expect(tickLabels([0.0008, 0.0009, 0.001, 0.0011])).toStrictEqual(['0.0008', '0.0009', '0.001', '0.0011']);
    expect(tickLabels([1000, 2000, null])).toStrictEqual(['1,000', '2,000', '']);
  });
});

describe('valueLabel', () => {
  test('returns four significant digits, in scientific notation when small or large', () => {
    expect([valueLabel(1.23456e-7), valueLabel(0.123456), valueLabel(3), valueLabel(null)]).toStrictEqual([
      '1.235e-7',
      '0.1235',
      '3',
      '-',
    ]);
  });
});
