import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

// The tests `npm run mutate` runs against each mutant: the unit tests beside the mutated code (ATK_MUTATE
// names folders, or files with an optional line range), not the e2e tests, which run the built CLI and
// so would test dist/, not the mutant. A folder brings every test file in it, a file its own test file.
const targets = (process.env.ATK_MUTATE ?? 'src/tokens,src/algorithms,src/rollout,src/runs,src/run,src/gateway').split(
  ',',
);
const include = targets.map((target) => {
  const path = target.replace(/:[\d-]+$/, '');
  return path.endsWith('.ts') ? path.replace(/\.ts$/, '.test.ts') : `${path}/**/*.test.ts`;
});
const setupFiles = [base.test?.setupFiles ?? []].flat().filter((f) => !f.startsWith('test/e2e/'));

export default defineConfig({ ...base, test: { ...base.test, include, setupFiles } });
