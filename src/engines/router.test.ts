import { afterAll, describe, expect, test } from 'vitest';
import { startEngineDouble, type EngineDouble } from '../__fixtures__/engine-double.js';
import { createRouterEngine } from './router.js';
import { createVllmClient } from './vllm.js';

const params = { maxTokens: 4, temperature: 1, topP: 1, topK: -1 };

describe('createRouterEngine', () => {
  const doubles: EngineDouble[] = [];
  afterAll(() => Promise.all(doubles.map((d) => d.close())));

  // Replica 0 answers only when released, so its requests stay in flight; replica 1 answers at once.
  async function twoReplicas(): Promise<{ release: () => void; slow: EngineDouble; fast: EngineDouble }> {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const slow = await startEngineDouble({
      script: async () => {
        await gate;
        return { tokenIds: [5, 6] };
      },
    });
    const fast = await startEngineDouble({ script: () => ({ tokenIds: [7] }) });
    doubles.push(slow, fast);
    return { release, slow, fast };
  }

  test('returns each request from the replica with the fewest in flight', async () => {
    const { release, slow, fast } = await twoReplicas();
    const router = createRouterEngine([slow, fast].map((d) => createVllmClient({ baseUrl: d.url, model: 'policy' })));
    const held = [router.generate([1], params), router.generate([2], params)];
    expect(router.inFlight()).toStrictEqual([1, 1]);
    // The fast replica drains while the slow one holds its request, so each next request goes fast.
    await expect(held[1]).resolves.toMatchObject({ tokenIds: [7] });
    const more = [await router.generate([3], params), await router.generate([4], params)];
    expect(more.map((g) => g.tokenIds)).toStrictEqual([[7], [7]]);
    expect(router.inFlight()).toStrictEqual([1, 0]);
    release();
    await expect(held[0]).resolves.toMatchObject({ tokenIds: [5, 6] });
    expect([slow.requests.length, fast.requests.length, router.inFlight()]).toStrictEqual([1, 3, [0, 0]]);
  });

  test('returns n-sample requests weighted by n, and frees the slot when a request fails', async () => {
    const failing = await startEngineDouble({ script: () => ({ status: 500, body: { error: { message: 'boom' } } }) });
    const ok = await startEngineDouble({ script: () => ({ tokenIds: [9] }) });
    doubles.push(failing, ok);
    const router = createRouterEngine([failing, ok].map((d) => createVllmClient({ baseUrl: d.url, model: 'policy' })));
    await expect(router.generate([1], params)).rejects.toThrow(/answered 500: boom/);
    expect(router.inFlight()).toStrictEqual([0, 0]);
    const pending = router.generateN([1], { ...params, n: 3 });
    expect(router.inFlight()).toStrictEqual([0, 3]);
    await pending;
  });

  test('returns the names every replica serves, and renames on every replica', async () => {
    const a = await startEngineDouble({ script: () => ({ tokenIds: [1] }), models: ['policy', 'policy@1'] });
    const b = await startEngineDouble({ script: () => ({ tokenIds: [1] }), models: ['policy'] });
    doubles.push(a, b);
    const router = createRouterEngine([a, b].map((d) => createVllmClient({ baseUrl: d.url, model: 'policy' })));
    expect([await router.models(), await router.health()]).toStrictEqual([['policy'], true]);
    router.setModel('policy@1');
    expect(router.replicas.map((r) => r.model)).toStrictEqual(['policy@1', 'policy@1']);
  });
});
