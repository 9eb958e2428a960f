import { describe, expect, test } from 'vitest';
import { ConfigError } from '../errors/index.js';
import { loadRecipe } from '../recipe/index.js';
import { projectRoot } from '../util/paths.js';
import { join } from 'node:path';

const recipe = (name: string): string => join(projectRoot(), 'recipes', name);

describe('scriptedUserSource', () => {
  test("returns no problem for user kind scripted without messages on a dataset with its own scripted user (helpdesk's)", async () => {
    const { recipe: loaded } = await loadRecipe(recipe('helpdesk.yaml'));
    expect([loaded.user?.kind, loaded.user?.messages]).toStrictEqual(['scripted', undefined]);
  });

  test('rejects user kind scripted without messages on a dataset that has no scripted user, at user.kind', async () => {
    const error = await loadRecipe(recipe('quickstart.yaml'), ['user.kind=scripted']).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain(
      'user.kind: kind scripted needs user.messages (dataset arith has no scripted user)',
    );
  });
});
