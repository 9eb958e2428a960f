import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import {
  commandLinesOf,
  helpCommands,
  parsesStrictly,
  readmeCommandsTable,
  recipePathsOf,
} from '../src/__fixtures__/docs-check.js';
import { loadRecipe } from '../src/recipe/index.js';
import { projectRoot } from '../src/util/paths.js';

// What the README and docs/ tell a user to type is held to the CLI that ships: each command line parses under
// atk's own strict parser, each recipe they name exists and validates, and the README's commands table is the
// commands' own --help.
const root = projectRoot();
const pages = ['README.md', ...readdirSync(join(root, 'docs')).map((f) => `docs/${f}`)]
  .filter((f) => f.endsWith('.md'))
  .sort();
const text = (page: string): string => readFileSync(join(root, page), 'utf8');

describe('docs', () => {
  test.each(pages)('returns a strict parse for every atk command line in %s', async (page) => {
    const failures: string[] = [];
    for (const line of commandLinesOf(text(page))) {
      const error = await parsesStrictly(line);
      if (error !== undefined) failures.push(`${page}:${line.lineNumber}: ${line.source}\n    ${error}`);
    }
    expect(failures).toStrictEqual([]);
  });

  test.each(pages)(
    'returns a valid recipe for every recipe path %s names, with the overrides given beside it',
    async (page) => {
      const failures: string[] = [];
      for (const { path, overrides, lineNumber } of recipePathsOf(text(page))) {
        try {
          await loadRecipe(join(root, path), overrides);
        } catch (error) {
          failures.push(`${page}:${lineNumber}: ${path} ${overrides.join(' ')}\n    ${(error as Error).message}`);
        }
      }
      expect(failures).toStrictEqual([]);
    },
  );

  test("returns the README's commands table as the commands' --help lists them", async () => {
    expect(readmeCommandsTable(text('README.md'))).toStrictEqual(await helpCommands());
  });

  test('returns a LICENSE whose terms are the license package.json names', () => {
    const license = (JSON.parse(text('package.json')) as { license: string }).license;
    expect(text('LICENSE').split('\n')[0]).toBe(`${license} License`);
  });
});
