import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'src/**/*.test.tsx', 'test/**/*.test.ts'],
    // The CLI entry point registers the built-in components; tests get the same through this setup.
    setupFiles: ['src/__fixtures__/register-builtins.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Tests spawn real subprocesses (trainer, sandbox); two cores cannot run many files at once.
    maxWorkers: 2,
  },
});
