import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, test } from 'vitest';
import { dataDir } from './paths.js';

describe('dataDir', () => {
  test('returns $ATK_DATA_DIR, resolved, first', () => {
    expect(dataDir({ ATK_DATA_DIR: 'rel/data', XDG_DATA_HOME: '/xdg' })).toBe(resolve('rel/data'));
  });

  test('returns $XDG_DATA_HOME/atk/datasets without ATK_DATA_DIR', () => {
    expect(dataDir({ XDG_DATA_HOME: '/xdg/share' })).toBe('/xdg/share/atk/datasets');
  });

  test('returns ~/.local/share/atk/datasets without either, or with a relative XDG_DATA_HOME (the spec says to ignore it)', () => {
    expect([dataDir({}), dataDir({ XDG_DATA_HOME: 'relative' })]).toStrictEqual([
      join(homedir(), '.local', 'share', 'atk', 'datasets'),
      join(homedir(), '.local', 'share', 'atk', 'datasets'),
    ]);
  });
});
