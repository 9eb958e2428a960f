// Regenerates the recipe reference in docs/recipes.md (between its markers) from the zod schema.
// Run after changing src/recipe/schema.ts: npx tsx scripts/recipe-reference.ts
import { readFileSync, writeFileSync } from 'node:fs';
import { RECIPE_REFERENCE_PAGE, REFERENCE_BEGIN, REFERENCE_END, referenceMarkdown } from '../src/recipe/reference.js';

const page = readFileSync(RECIPE_REFERENCE_PAGE, 'utf8');
const begin = page.indexOf(REFERENCE_BEGIN);
const end = page.indexOf(REFERENCE_END);
if (begin < 0 || end < begin) {
  console.error(`${RECIPE_REFERENCE_PAGE} has no recipe reference markers`);
  process.exit(1);
}
writeFileSync(
  RECIPE_REFERENCE_PAGE,
  page.slice(0, begin) + referenceMarkdown() + page.slice(end + REFERENCE_END.length),
);
console.log(`${RECIPE_REFERENCE_PAGE}: recipe reference regenerated`);
