// Mutation testing of the TypeScript core (`npm run mutate`, scripts/mutate.mjs): Stryker plants one
// small bug at a time in the modules it names and runs the vitest tests that cover each; a mutant no
// test notices survives. Incremental: a rerun only tests mutants whose code or covering tests changed.
// scripts/mutate.mjs runs one target at a time, each in a folder of its own (ATK_MUTATE_DIR), so the results
// of one target are kept while another runs, and two targets can run side by side.
const targets = (process.env.ATK_MUTATE ?? 'src/tokens,src/algorithms,src/rollout,src/runs,src/run,src/gateway').split(',');
const dir = process.env.ATK_MUTATE_DIR ?? 'reports/mutation';

export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutate.config.ts' },
  plugins: ['@stryker-mutator/vitest-runner'],
  // A folder, or a file with an optional line range (src/run/step-phases.ts:60-90).
  mutate: targets.flatMap((t) =>
    /\.ts(:[\d-]+)?$/.test(t) ? [t] : [`${t}/**/*.ts`, `!${t}/**/*.test.ts`, `!${t}/**/*.d.ts`],
  ),
  // Stryker rewrites the tsconfig's outside paths with TypeScript's JavaScript API, which TypeScript 7
  // does not have; ours names nothing outside the sandbox, so it is pointed at no file.
  tsconfigFile: 'reports/mutation/no-tsconfig.json',
  coverageAnalysis: 'perTest',
  incremental: true,
  incrementalFile: `${dir}/stryker-incremental.json`,
  // progress-append-only: a line every ten seconds (done, survived, time left), for a run that takes hours.
  reporters: ['clear-text', 'json', 'progress-append-only'],
  jsonReporter: { fileName: `${dir}/mutation.json` },
  clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
  // Two cores: one test process per core (ATK_MUTATE_CONCURRENCY=1 leaves one for other work).
  concurrency: Number(process.env.ATK_MUTATE_CONCURRENCY ?? 2),
  timeoutMS: 20_000,
  tempDirName: `${dir}/sandbox`,
  // Not copied into the sandbox: what runs, benches and scratch work leave in the checkout, and the other
  // targets' reports and sandboxes (git ignores them all).
  ignorePatterns: ['/scratch', '/runs/*', '!/runs/README.md', '/test-artifacts', '/coverage', '/reports'],
  cleanTempDir: 'always',
  // Module-level constants run once at import; re-running every test for each of them costs more than it finds.
  ignoreStatic: true,
};
