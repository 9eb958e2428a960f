import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

// The tests `npm run mutate` runs against each mutant: the unit tests beside the mutated code (ATK_MUTATE
// names the folders or files), not the e2e tests, which run the built CLI and so would test dist/, not
// the mutant.
const targets = (process.env.ATK_MUTATE ?? 'src/tokens,src/algorithms,src/rollout,src/runs,src/run,src/gateway').split(
  ',',
);
const folders = [...new Set(targets.map((t) => (t.endsWith('.ts') ? t.slice(0, t.lastIndexOf('/')) : t)))];
const setupFiles = [base.test?.setupFiles ?? []].flat().filter((f) => !f.startsWith('test/e2e/'));

export default defineConfig({
  ...base,
  test: { ...base.test, include: folders.map((f) => `${f}/**/*.test.ts`), setupFiles },
});
