import { describe, expect, test } from 'vitest';
import { InputError } from '../errors/index.js';
import { resumeOverrides } from './run.js';

describe('resumeOverrides', () => {
  test('returns the first positional as an override with --resume', () => {
    expect(resumeOverrides({ recipe: 'train.steps=20', overrides: ['seed=1'] })).toStrictEqual([
      'train.steps=20',
      'seed=1',
    ]);
    expect(resumeOverrides({ overrides: [] })).toStrictEqual([]);
  });

  test('rejects a recipe file named beside --resume', () => {
    expect(() => resumeOverrides({ recipe: 'recipes/quickstart.yaml', overrides: [] })).toThrow(InputError);
  });
});
