import { describe, expect, it } from 'vitest';
import { closestName, editDistance } from './did-you-mean.js';

describe('closestName', () => {
  it('returns the nearest candidate for a typo', () => {
    expect(closestName('algoritm', ['algorithm', 'agent', 'model'])).toBe('algorithm');
  });
  it('returns undefined when nothing is close', () => {
    expect(closestName('zzzzzz', ['algorithm', 'agent'])).toBeUndefined();
  });
  it('computes edit distance', () => {
    expect(editDistance('kitten', 'sitting')).toBe(3);
  });
});
