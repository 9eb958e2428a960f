import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { defineConfig } from 'vitest/config';

// Data-dependent tests read $ATK_DATA_DIR: the full shared datasets beside the clone when they are
// there, else the small licensed slices shipped in test/data (see test/data/README.md), so a fresh
// clone passes without the network and nothing is skipped for want of data.
const shared = resolve(import.meta.dirname, '..', 'shared', 'datasets');
const testData =
  process.env.ATK_DATA_DIR || (existsSync(shared) ? shared : resolve(import.meta.dirname, 'test', 'data'));

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'src/**/*.test.tsx', 'test/**/*.test.ts'],
    // The CLI entry point registers the built-in components; tests get the same through this setup.
    // The e2e tests run the built CLI: the second file fails each of them when dist/ is older than src/.
    // The third points $TMPDIR, for the test and every process it starts, at the run's temporary root,
    // which the global setup makes and removes: no test leaves files in the host's temporary directory.
    setupFiles: ['src/__fixtures__/register-builtins.ts', 'test/e2e/build-current.setup.ts', 'test/temp-root.setup.ts'],
    globalSetup: ['test/temp-root.global.ts'],
    // Generous: several tests start a real trainer and engine, and two files share two cores.
    testTimeout: 180_000,
    hookTimeout: 300_000,
    // Tests spawn real subprocesses (trainer, engines, sandbox) and much of their time is spent waiting on
    // them (start-up, heartbeats, kills): on 2 cores, 2 files at a time kept 1.56 cores busy (609 s), 3 keep
    // the machine busy (514 s, the same tests green). More would only queue for the cores.
    maxWorkers: 3,
    // One worker process runs many files: a fresh process and module graph per file cost ~0.8 CPU-s each,
    // over 230 files. The tests keep no state between files that needs it: the built-ins register once
    // per process, and what a test changes of the process (cwd, env, the standard streams) it restores.
    isolate: false,
    // ATK_TEST_TIMES=FILE also writes the JSON report that scripts/test-times.mjs turns into per-file times.
    reporters: process.env.ATK_TEST_TIMES ? ['default', 'json'] : ['default'],
    ...(process.env.ATK_TEST_TIMES ? { outputFile: { json: process.env.ATK_TEST_TIMES } } : {}),
    // vLLM is looked for in atk's own venv first: the fast suite must not find this host's (npm run test:vllm names one).
    env: {
      ATK_DATA_DIR: testData,
      ATK_VLLM_VENV: process.env.ATK_VLLM_VENV || resolve(import.meta.dirname, 'no-vllm-venv'),
    },
  },
});
