import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, test } from 'vitest';
import { projectRoot } from '../util/paths.js';
import { loadRecipe } from './index.js';

/** Every .yaml under recipes/, at any depth. */
function shippedRecipes(): string[] {
  const root = join(projectRoot(), 'recipes');
  return (readdirSync(root, { recursive: true, withFileTypes: true }) as import('node:fs').Dirent[])
    .filter((e) => e.isFile() && e.name.endsWith('.yaml'))
    .map((e) => relative(projectRoot(), join(e.parentPath, e.name)))
    .sort();
}

describe('shipped recipes', () => {
  const files = shippedRecipes();

  test.each(files)('returns a valid recipe for %s', async (file) => {
    const loaded = await loadRecipe(join(projectRoot(), file));
    expect(loaded.recipe.name).toMatch(/^[A-Za-z0-9]/);
  });
});
