// Regenerates the recipe reference in README.md (between its markers) from the zod schema.
// Run after changing src/recipe/schema.ts: npx tsx scripts/readme-reference.ts
import { readFileSync, writeFileSync } from 'node:fs';
import { REFERENCE_BEGIN, REFERENCE_END, referenceMarkdown } from '../src/recipe/reference.js';

const readme = readFileSync('README.md', 'utf8');
const begin = readme.indexOf(REFERENCE_BEGIN);
const end = readme.indexOf(REFERENCE_END);
if (begin < 0 || end < begin) {
  console.error('README.md has no recipe reference markers');
  process.exit(1);
}
writeFileSync('README.md', readme.slice(0, begin) + referenceMarkdown() + readme.slice(end + REFERENCE_END.length));
console.log('README.md: recipe reference regenerated');
