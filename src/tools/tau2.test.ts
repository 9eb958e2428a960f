import { describe, expect, test } from 'vitest';
import { TAU2_DB_KEY } from '../domains/tau2/index.js';
import { tau2Tools } from './tau2.js';

const ctx = { recipeDir: '.', warn: () => undefined };
const env = () => ({
  episodeId: '0-0',
  task: { id: 't', prompt: '', data: {} },
  state: new Map<string, unknown>(),
  signal: new AbortController().signal,
});

describe('tau2Tools', () => {
  test('returns only the tools named by only, with the episode database still set up', async () => {
    const make = await tau2Tools.create(
      { domain: 'retail', release: '2025-06-10', only: ['cancel_pending_order', 'get_order_details'] },
      ctx,
    );
    const e = env();
    expect([make(e).map((t) => t.name), e.state.has(TAU2_DB_KEY)]).toStrictEqual([
      ['cancel_pending_order', 'get_order_details'],
      true,
    ]);
    const none = await tau2Tools.create({ domain: 'retail', only: [] }, ctx);
    expect(none(env())).toStrictEqual([]);
  });

  test('rejects a name the domain does not have', async () => {
    await expect(tau2Tools.create({ domain: 'airline', only: ['get_order_details'] }, ctx)).rejects.toThrow(
      /unknown tool get_order_details/,
    );
  });
});
