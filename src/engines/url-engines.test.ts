import { afterAll, describe, expect, test } from 'vitest';
import { startEngineDouble, type EngineDouble } from '../__fixtures__/engine-double.js';
import { RecipeSchema } from '../recipe/schema.js';
import { engineUrls, urlEngines } from './url-engines.js';

const params = { maxTokens: 4, temperature: 1, topP: 1, topK: -1 };

describe('urlEngines', () => {
  const doubles: EngineDouble[] = [];
  afterAll(() => Promise.all(doubles.map((d) => d.close())));

  test("returns a router over every URL of a recipe's url list, spreading concurrent requests over them", async () => {
    doubles.push(
      await startEngineDouble({ script: () => ({ tokenIds: [5] }) }),
      await startEngineDouble({ script: () => ({ tokenIds: [6] }) }),
    );
    const recipe = RecipeSchema.parse({
      name: 'x',
      model: { path: 'm', engine: { kind: 'url', url: doubles.map((d) => d.url) } },
      reward: {},
    });
    expect(engineUrls(recipe.model.engine)).toStrictEqual(doubles.map((d) => d.url));
    const router = urlEngines(engineUrls(recipe.model.engine), 'vllm', 10_000);
    const replies = await Promise.all([router.generate([1], params), router.generate([2], params)]);
    expect([replies.map((r) => r.tokenIds).sort(), doubles.map((d) => d.requests.length)]).toStrictEqual([
      [[5], [6]],
      [1, 1],
    ]);
  });

  test('returns a one-URL list for a single url, and rejects an empty list', () => {
    expect(engineUrls({ url: 'http://h:1' })).toStrictEqual(['http://h:1']);
    expect(
      RecipeSchema.safeParse({ name: 'x', model: { path: 'm', engine: { kind: 'url', url: [] } }, reward: {} }).success,
    ).toBe(false);
  });
});
